#include "store/import_check.hpp"

#include "store/errors.hpp"
#include "store/line_text.hpp"
#include "support/paths.hpp"

namespace acp::store {

namespace {

std::string session_named(const std::string& id) { return "session \"" + id + "\""; }

// A line as the strict reader takes it: every imported line is meant to be committed, so a bad
// one is refused, never read as a torn tail.
PlainLine strict_line(const std::string& text, std::int64_t number) {
  PlainLine l;
  l.text = text;
  l.number = number;
  l.strict = true;
  return l;
}

void check_first_seq(const std::string& id, std::int64_t first_seq) {
  if (first_seq < 0)
    throw InvalidBatch(session_named(id) + ": the imported lines start at seq " + std::to_string(first_seq) +
                       ", which is negative");
}

} // namespace

std::optional<SessionHeader> check_import_header(const std::string& id, Generation g, const std::string& header_line,
                                                 std::int64_t first_seq) {
  check_first_seq(id, first_seq);
  if (first_seq > 0) return std::nullopt;
  const std::string where = session_named(id) + ": the imported header line";
  if (header_line.find('\n') != std::string::npos) throw InvalidBatch(where + " holds a line break");
  check_log_text(header_line, where);
  ScanResult out;
  LineWalker walker(where, {}, out, EventLifetime::kept);
  try {
    walker.line(strict_line(header_line, 1));
  } catch (const StoreCorrupt& e) {
    throw InvalidBatch(where + ": " + e.reason());
  }
  const SessionHeader& h = out.header;
  if (h.id != id) throw InvalidBatch(where + " names session \"" + h.id + "\"");
  // As create() refuses them: a session copied in must be one the store could have created.
  if (h.cwd && !support::is_absolute_path(*h.cwd))
    throw InvalidBatch(where + ": session cwd must be an absolute path: " + *h.cwd);
  if (g == Generation::project_dirs && h.cwd && h.cwd->empty())
    throw InvalidBatch(where + ": session cwd must not be empty in a harness 0.1 session");
  return out.header;
}

LogState check_import_lines(const std::string& id, const SessionHeader& header, LogState state,
                            std::int64_t first_seq, const std::vector<std::string>& lines, const ImportSink& sink,
                            EventLifetime lifetime) {
  check_first_seq(id, first_seq);
  if (state.count() != first_seq)
    throw InvalidBatch(session_named(id) + " holds " + std::to_string(state.count()) +
                       " events; the imported lines start at seq " + std::to_string(first_seq));
  const std::string where = session_named(id) + ": imported lines";
  ScanResult out;
  out.header = header;
  out.state = std::move(state);
  std::size_t at = 0;
  const EventSink each = [&](boost::json::object&& e) {
    if (sink) sink(at, std::move(e));
  };
  LineWalker walker(where, each, out, lifetime);
  for (; at < lines.size(); ++at) {
    const std::string& l = lines[at];
    // The number of the line within the batch, 1-based, in every message.
    const std::int64_t number = std::int64_t(at) + 1;
    const std::string line_where = where + ", line " + std::to_string(number);
    if (l.find('\n') != std::string::npos) throw InvalidBatch(line_where + ": holds a line break");
    check_log_text(l, where, number);
    try {
      walker.line(strict_line(l, number + 1));  // line 1 of a log is its header
    } catch (const StoreCorrupt& e) {
      throw InvalidBatch(line_where + ": " + e.reason());
    }
  }
  return std::move(out.state);
}

} // namespace acp::store
