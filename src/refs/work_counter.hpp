// A plain counter of the bytes the reference service scans or writes while preparing context.
//
// It exists so tests can prove that retention is linear in the size of a source by counting work
// instead of timing it: every byte measured for a serialized size, probed during truncation, or
// written to the final prompt is added here, and every event or item visited counts one unit. Not thread-safe; one counter per prepare() call.
#pragma once

#include <cstdint>

namespace acp::refs {

struct WorkCounter {
  std::uint64_t bytes_measured = 0;  ///< bytes scanned to compute serialized sizes
  std::uint64_t bytes_written = 0;   ///< bytes appended to the serialized data objects
  std::uint64_t truncation_probes = 0;  ///< head/tail probes of the binary search (each O(1))
  std::uint64_t retention_steps = 0;    ///< items considered for dropping plus items truncated
  std::uint64_t events_visited = 0;     ///< surface events examined by projection

  std::uint64_t total() const {
    return bytes_measured + bytes_written + truncation_probes + retention_steps + events_visited;
  }
};

} // namespace acp::refs
