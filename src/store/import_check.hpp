// The checks of Backend::import_lines (`dsh-acp store copy`), once for every backend: a batch of
// verbatim lines is taken only when a reader would read each line as it reads a stored one (the
// strict rules of LineWalker) and the lines continue the log where it ends. The same mistake is
// refused with the same InvalidBatch and the same message whatever the destination.
#pragma once

#include "store/layout.hpp"
#include "store/log_scan.hpp"
#include "store/log_state.hpp"
#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace acp::store {

/// Gets every event of an imported batch, normalised, with the 0-based index of its line.
using ImportSink = std::function<void(std::size_t line, boost::json::object&& event)>;

/// What needs no store, checked before anything is read or locked: `first_seq` is not negative,
/// and with `first_seq` 0 `header_line` is a session header a reader takes (one line, valid UTF-8,
/// this format version, no retired fields) naming `id`, with an absolute cwd (not empty in lines
/// of generation 0.1). Returns that header, nullopt when the import continues a log. Throws
/// InvalidBatch (InvalidLogText for bytes that are not UTF-8).
std::optional<SessionHeader> check_import_header(const std::string& id, Generation g, const std::string& header_line,
                                                 std::int64_t first_seq);

/// Walks `lines` after a log of `header` whose events so far made `state` (an empty state for a
/// new log), as a reader reads a stored log: each line one record or packed row, valid UTF-8, no
/// line break, its seqs continuing the log, no legacy format. `state` must hold `first_seq` events.
/// `sink` (may be empty) gets each event. Returns the log's state after the batch. Throws
/// InvalidBatch (InvalidLogText for bytes that are not UTF-8); the sink may have had the events of
/// the lines before the bad one, so the caller writes nothing of the batch before this returns.
LogState check_import_lines(const std::string& id, const SessionHeader& header, LogState state,
                            std::int64_t first_seq, const std::vector<std::string>& lines, const ImportSink& sink,
                            EventLifetime lifetime = EventLifetime::kept);

} // namespace acp::store
