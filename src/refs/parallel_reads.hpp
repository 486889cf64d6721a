// One read_surface() per distinct source, all in flight at once, raced against cancellation.
//
// Each read runs on a detached thread that shares ownership of the source and of the result slots,
// so a cancelled caller can return immediately while a slow read finishes on its own. The outcome
// is decided deterministically in mention order: the earliest failing read (by position, not by
// time) is the one reported, as the original's synchronous test doubles observe it.
#pragma once

#include "refs/service.hpp"

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::refs {

/// Reads every id; throws cancelled (stop requested before or during the reads, or a read failed
/// while stop was requested) or read_failed (`failed to read referenced session: <what()>`).
std::vector<store::SurfaceSnapshot> read_all_in_parallel(const std::shared_ptr<SessionSource>& source,
                                                         const std::vector<std::string>& ids, std::stop_token stop);

} // namespace acp::refs
