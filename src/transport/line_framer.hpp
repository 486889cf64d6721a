// Splits a byte stream into newline-delimited frames (ACP stdio transport), without I/O.
//
// A frame ends at '\n'; one trailing '\r' is stripped and blank lines are skipped. A frame longer
// than the limit is never buffered whole: its bytes are dropped as they arrive and one Oversize
// event is reported when its newline is reached, so a hostile client cannot make us hold it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace acp::transport {

struct Frame {
  std::string text;
};
struct Oversize {
  std::uint64_t bytes;  ///< size of the dropped frame, without its line end
};
using FramerEvent = std::variant<Frame, Oversize>;

class LineFramer {
public:
  explicit LineFramer(std::size_t max_frame_bytes) : max_(max_frame_bytes) {}

  /// Consumes `data`, appending complete frames and oversize reports to `out` in stream order.
  void feed(std::string_view data, std::vector<FramerEvent>& out);

  /// At end of input: a final unterminated frame is still a frame (clients may omit the last '\n').
  void finish(std::vector<FramerEvent>& out);

private:
  void complete(std::vector<FramerEvent>& out);
  void start_discarding_partial();

  std::size_t max_;
  std::string partial_;
  bool discarding_ = false;
  std::uint64_t discarded_ = 0;
  bool discarded_cr_ = false;  ///< the last byte dropped was '\r' (part of the line end if '\n' follows)
};

} // namespace acp::transport
