// Log lines are JSON text, so UTF-8. Releases before this rule wrote some raw bytes into logs (a
// command's output, a file name), which made the whole session unreadable; these are the one rule
// for reading such a line and the one check every backend makes before a line is written.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace acp::store {

/// Parses one stored line (support::parse_json). A line that fails only because it is not valid
/// UTF-8 is read with each ill-formed sequence as U+FFFD, as the harness's own reader (a lossy
/// TextDecoder) reads it: then `repaired`, when given, receives that text, and `replaced` is set.
boost::json::value parse_stored_line(std::string_view text, boost::system::error_code& ec, bool* replaced = nullptr,
                                     std::string* repaired = nullptr, boost::json::storage_ptr storage = {});

/// Throws InvalidLogText unless `lines` (one or more lines of log text) is valid UTF-8: the only
/// way a serialised record can fail to be JSON text. Called before anything of a batch is written.
/// `where` names the log; `first_line` is the 1-based number of the first line within the batch.
void check_log_text(std::string_view lines, const std::string& where, std::int64_t first_line = 1);

/// Once per log and process: a warning that a line of `where` was read with replacement characters.
void note_replaced_text(const std::string& where, std::int64_t line);

} // namespace acp::store
