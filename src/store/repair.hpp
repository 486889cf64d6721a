// Crash repair of a scanned log (docs/store-format.md#crash-repair). Runs only inside a writer's lock, and only
// when the scan found a torn tail or a turn left open by a writer that died: truncate to the
// committed bytes (raw) or to the torn frame's start (zstd), re-append the events recovered from
// a torn zstd frame, then append the synthetic closers, and fsync.
#pragma once

#include "store/layout.hpp"
#include "store/log_scan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace acp::store {

/// True when load() semantics require repair before anything is appended.
bool needs_repair(const ScanResult& scan);

/// The synthetic closers (LogState::closers) as log text in the shape `gen` writes them, one line
/// each ending in '\n': what repair appends after an interrupted turn, in any backend.
std::string closer_lines(const std::vector<boost::json::object>& closers, Generation gen);

/// Repairs the open log `fd` in place and returns its state afterwards (the scan's state plus
/// the closers). A failure while appending rolls back to the truncated length.
LogState repair_log(int fd, const std::string& path, Encoding enc, Generation gen, const ScanResult& scan);

} // namespace acp::store
