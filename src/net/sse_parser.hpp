// Incremental Server-Sent Events parser: the framing of OpenAI-style streaming responses and of MCP
// servers over HTTP (a POST's streamed answer, the legacy transport's event stream).
//
// Bytes arrive in arbitrary pieces (TCP reads, HTTP chunks); an event, a line or a CRLF pair may be
// split at any byte, so the parser keeps only the unfinished line and the event being assembled.
// Lines end with \n, \r\n or \r; a blank line ends an event; several `data:` lines join with \n; one
// optional space after the colon is dropped. Comment lines (starting with ':', e.g. DeepSeek's
// `: keep-alive` while a request is queued) are reported as their own items because the caller's idle
// timer must NOT be reset by them. `data: [DONE]` is reported as `done`. An event still incomplete
// at end of stream is discarded (as the SSE specification says), so a cut stream is never mistaken
// for a complete one. Pure: no I/O, no allocation beyond the line and event buffers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace acp::net {

enum class SseItemKind {
  event,    ///< a dispatched event with data
  comment,  ///< a ':' line (text after the colon, leading space kept)
  done,     ///< the `data: [DONE]` sentinel of OpenAI-compatible streams
};

struct SseItem {
  SseItemKind kind;
  std::string data;   ///< event data (lines joined with \n) or comment text
  std::string event;  ///< the `event:` field, empty when absent
};

class SseParser {
public:
  /// Largest line or event accepted; a stream exceeding it is broken, not merely big.
  static constexpr std::size_t kMaxEventBytes = 32u << 20;

  SseParser() = default;
  /// A parser whose lines and events may be at most `max_event_bytes` long.
  explicit SseParser(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  /// Consumes `bytes` and appends every item completed by them to `out`. Throws std::length_error
  /// when a line or an event exceeds the limit (kMaxEventBytes unless given).
  void feed(std::string_view bytes, std::vector<SseItem>& out);

  /// True when bytes of an unfinished line or event are buffered (a stream cut mid-event).
  bool has_partial() const noexcept { return !line_.empty() || has_data_ || !event_.empty(); }

private:
  void on_line(std::string_view line, std::vector<SseItem>& out);
  void dispatch(std::vector<SseItem>& out);

  std::size_t max_event_bytes_ = kMaxEventBytes;
  std::string line_;
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  bool skip_lf_ = false;  ///< the previous piece ended with \r: a leading \n belongs to that line end
};

} // namespace acp::net
