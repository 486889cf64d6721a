#include "line_framer.hpp"

namespace acp::transport {

namespace {

// Over the limit once a final '\r' (part of the line end) is set aside.
bool over_limit(const std::string& partial, std::size_t max) {
  return partial.size() > max && !(partial.size() == max + 1 && partial.back() == '\r');
}

} // namespace

void LineFramer::start_discarding_partial() {
  discarding_ = true;
  discarded_ = partial_.size();
  discarded_cr_ = partial_.back() == '\r';
  partial_.clear();
}

void LineFramer::complete(std::vector<FramerEvent>& out) {
  if (discarding_) {
    // Counted like a buffered frame: without its line end ("\n" or "\r\n").
    std::uint64_t bytes = discarded_ - (discarded_cr_ ? 1 : 0);
    // In place (GCC 12 warns about moving a temporary variant), from an Oversize built with
    // braces: clang 14 cannot build an aggregate from parentheses (P0960).
    out.emplace_back(std::in_place_type<Oversize>, Oversize{bytes});
    discarding_ = false;
    discarded_ = 0;
    discarded_cr_ = false;
    partial_.clear();
    return;
  }
  if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
  bool blank = partial_.find_first_not_of(" \t\r") == std::string::npos;
  if (!blank) out.push_back(Frame{std::move(partial_)});
  partial_.clear();
}

void LineFramer::feed(std::string_view data, std::vector<FramerEvent>& out) {
  while (!data.empty()) {
    std::size_t nl = data.find('\n');
    std::string_view piece = data.substr(0, nl);
    if (discarding_) {
      discarded_ += piece.size();
      if (!piece.empty()) discarded_cr_ = piece.back() == '\r';
    } else if (partial_.size() + piece.size() > max_ + 1) {
      // +1 leaves room for a '\r' that belongs to the line end, not to the frame.
      discarding_ = true;
      discarded_ = partial_.size() + piece.size();
      discarded_cr_ = piece.empty() ? partial_.back() == '\r' : piece.back() == '\r';
      partial_.clear();
      partial_.shrink_to_fit();
    } else {
      partial_.append(piece);
    }
    if (nl == std::string_view::npos) return;
    if (!discarding_ && over_limit(partial_, max_)) start_discarding_partial();
    complete(out);
    data.remove_prefix(nl + 1);
  }
}

void LineFramer::finish(std::vector<FramerEvent>& out) {
  // feed() buffers up to max + 1 bytes (room for a '\r'), so an unterminated last frame is checked here.
  if (!discarding_ && over_limit(partial_, max_)) start_discarding_partial();
  if (discarding_ || !partial_.empty()) complete(out);
}

} // namespace acp::transport
