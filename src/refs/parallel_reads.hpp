// One read_projected() per distinct source, all in flight at once, raced against cancellation.
//
// Each read runs on a std::jthread of this call. Every reader is joined before the call returns or
// throws: on a cancel, or once the outcome is decided by a failure, the remaining readers are asked
// to stop through their stop token and then joined. The outcome is decided deterministically in
// mention order: the earliest failing read (by position, not by time) is the one reported, as the
// original's synchronous test doubles observe it.
#pragma once

#include "refs/service.hpp"

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::refs {

/// Reads every id (read_anchored() where anchors[i] is set); throws cancelled (stop requested before or during the reads, or a read failed
/// while stop was requested) or read_failed (`failed to read referenced session: <what()>`).
std::vector<ProjectedSource> read_all_in_parallel(SessionSource& source, const std::vector<std::string>& ids,
                                                  const std::vector<std::optional<std::int64_t>>& anchors,
                                                  std::int64_t max_reference_bytes, std::stop_token stop);

} // namespace acp::refs
