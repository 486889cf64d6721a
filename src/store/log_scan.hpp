// scanLog (docs/store-format.md#reading-the-committed-prefix): the rules that decide which events of
// a log are committed. Lines are walked with a seq cursor; the first unparsable or out-of-sequence
// line ends the preserved prefix, unless a later line holds a turn/end, in which case the log is
// corrupt (the damage sits inside finished history). Legacy formats the harness rejects on load are
// corrupt too. The scan never writes; repair is the writer's job.
#pragma once

#include "store/chunk_rows.hpp"
#include "store/layout.hpp"
#include "store/log_source.hpp"
#include "store/log_state.hpp"
#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::store {

struct ScanResult {
  SessionHeader header;
  LogState state;                   ///< folded over every preserved event (recovered ones included)
  std::uint64_t file_size = 0;
  /// Where repair truncates: raw = end of the last preserved line (or the header line);
  /// zstd = end of the last complete frame.
  std::uint64_t committed_bytes = 0;
  /// The file holds bytes beyond committed_bytes (raw) / a torn final frame (zstd).
  bool torn = false;
  /// zstd: events recovered from the torn final frame, to be re-appended by repair.
  std::vector<boost::json::object> recovered;
};

/// Called with every preserved event, in order, as soon as it is known to be preserved.
using EventSink = std::function<void(boost::json::object&&)>;

/// How long a sink keeps the events it is given.
enum class EventLifetime {
  kept,       ///< events (or copies of their parts) may live on: each owns its memory
  transient,  ///< the sink is done with each event when it returns: a line's events share one
              ///< arena (fewer allocations; anything kept still keeps its line's arena alive)
};

/// The per-line rules of scan_log, for lines from any source (a file, a database's rows): line 1
/// is the header; every other line is parsed, its packed row expanded, its seqs checked against
/// `out.state` (which may hold an earlier prefix: the lines then continue at its count), legacy
/// formats refused, its events normalised, folded into `out.state` and given to `sink`. A bad
/// line of a `strict` PlainLine throws StoreCorrupt(where, number, why) at once; otherwise it ends
/// the preserved prefix as scan_log describes.
class LineWalker {
public:
  LineWalker(const std::string& where, const EventSink& sink, ScanResult& out, EventLifetime lifetime)
      : path_(where), sink_(sink), out_(out), lifetime_(lifetime) {}

  void line(const PlainLine& l);
  /// file_end of the last preserved line.
  std::uint64_t committed_end() const { return committed_end_; }

private:
  void header(const PlainLine& l);

  const std::string& path_;
  const EventSink& sink_;
  ScanResult& out_;
  EventLifetime lifetime_;
  std::vector<boost::json::object> kept_;  ///< a line's events for a sink that keeps them
  StorageLineEvents transient_;             ///< a line's events for a transient sink
  bool suspended_ = false;
  std::int64_t bad_line_ = 0;
  std::string bad_reason_;
  std::uint64_t committed_end_ = 0;
};

/// Scans the open log. Throws StoreCorrupt (file, 1-based line, reason). With a sink, events
/// before a hard error may already have been delivered when the error is thrown. `stop` is
/// checked before every line: once requested, ReadCancelled is thrown.
ScanResult scan_log(int fd, const std::string& path, Encoding enc, const EventSink& sink = {},
                    std::stop_token stop = {}, EventLifetime lifetime = EventLifetime::kept);

} // namespace acp::store
