// Giving freed memory back to the system. glibc keeps what a thread freed in that thread's malloc
// arena (one per pool thread), so after a large transient working set — a reference's source log,
// a long answer's chunk records — the process stays as big as its peak. Call it on a pool thread
// (it walks every arena: a few milliseconds on a large heap), after the working set is freed.
#pragma once

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace acp::support {

inline void give_back_memory() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

} // namespace acp::support
