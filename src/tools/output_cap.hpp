// Command output kept within a bound: the first and the last halves of the budget, with a notice of
// what was left out between them. Fed as the output arrives, it holds at most the budget, whatever
// the command prints.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace acp::tools {

class OutputCap {
public:
  explicit OutputCap(std::size_t max_bytes);

  void append(std::string_view bytes);
  std::size_t total_bytes() const { return total_; }

  /// The kept text: whole when it fitted; else head, `[... N bytes omitted ...]`, tail, both cut at
  /// UTF-8 character boundaries.
  std::string text() const;

private:
  std::size_t head_max_;
  std::size_t tail_max_;
  std::string head_;
  std::string tail_;          ///< a ring of the last tail_max_ bytes once the head is full
  std::size_t tail_start_ = 0;
  std::size_t total_ = 0;
};

} // namespace acp::tools
