// foldSurface (harness-compat §2.1): the current conversation surface of a log, i.e. which
// surface events are live after every append and replace (compaction). A single pass; any rule
// violation throws FoldError with the message the harness would give.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <vector>

namespace acp::store {

/// Seqs on the surface, in surface order. `events` must be the raw log events (seq == index).
std::vector<std::int64_t> fold_surface(const std::vector<boost::json::object>& events);

} // namespace acp::store
