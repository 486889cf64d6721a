#include "tools/output_cap.hpp"

#include "support/utf8.hpp"

#include <algorithm>

namespace acp::tools {

OutputCap::OutputCap(std::size_t max_bytes) : head_max_(max_bytes / 2), tail_max_(max_bytes - max_bytes / 2) {}

void OutputCap::append(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < head_max_) {
    std::size_t n = std::min(bytes.size(), head_max_ - head_.size());
    head_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  if (tail_max_ == 0) return;
  if (bytes.size() >= tail_max_) {
    tail_.assign(bytes.substr(bytes.size() - tail_max_));
    tail_start_ = 0;
    return;
  }
  // Fill the ring, then overwrite its oldest bytes in at most two copies.
  std::size_t fill = std::min(bytes.size(), tail_max_ - tail_.size());
  tail_.append(bytes.substr(0, fill));
  bytes.remove_prefix(fill);
  while (!bytes.empty()) {
    std::size_t n = std::min(bytes.size(), tail_max_ - tail_start_);
    tail_.replace(tail_start_, n, bytes.substr(0, n));
    tail_start_ = (tail_start_ + n) % tail_max_;
    bytes.remove_prefix(n);
  }
}

std::string OutputCap::text() const {
  std::string tail = tail_.substr(tail_start_) + tail_.substr(0, tail_start_);
  if (total_ <= head_max_ + tail_max_) return head_ + tail;
  // Cut where characters begin: the head drops a character the budget cut short, the tail the
  // remnant bytes of one.
  std::size_t head_end = head_.size();
  if (head_end > 0) {
    std::size_t lead = support::utf8_floor(head_, head_end - 1);
    if (!support::decode_utf8(head_, lead).valid) head_end = lead;
  }
  std::size_t tail_begin = 0;
  while (tail_begin < tail.size() && tail_begin < 3 && !support::decode_utf8(tail, tail_begin).valid) ++tail_begin;
  const std::size_t omitted = total_ - head_end - (tail.size() - tail_begin);
  return head_.substr(0, head_end) + "\n[... " + std::to_string(omitted) + " bytes omitted ...]\n" + tail.substr(tail_begin);
}

} // namespace acp::tools
