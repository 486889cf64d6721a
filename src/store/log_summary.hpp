// The cheap read behind the listing index: a log's header, latest title and last event time,
// without validating or parsing every event. Only lines that can hold a session/title and the
// last complete line are JSON-parsed, which is what keeps a 10k-session rebuild within budget.
#pragma once

#include "store/layout.hpp"
#include "store/session_types.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace acp::store {

struct LogSummary {
  std::optional<SessionHeader> header;  ///< nullopt: not a valid, version-0 header (not listed)
  std::optional<std::string> title;
  std::int64_t updatedAt = 0;           ///< time of the last complete event line, else createdAt
};

/// Never throws for file content (unreadable content just yields what was found before it);
/// throws StoreError for I/O failures other than the file having vanished.
LogSummary summarize_log(const std::string& path, Encoding enc);

} // namespace acp::store
