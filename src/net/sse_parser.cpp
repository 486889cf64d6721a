#include "net/sse_parser.hpp"

#include <stdexcept>

namespace acp::net {

void SseParser::feed(std::string_view bytes, std::vector<SseItem>& out) {
  std::size_t i = 0;
  if (skip_lf_ && !bytes.empty()) {
    skip_lf_ = false;
    if (bytes.front() == '\n')
      i = 1;
  }
  while (i < bytes.size()) {
    std::size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      if (line_.size() + (bytes.size() - i) > max_event_bytes_)
        throw std::length_error("SSE line exceeds " + std::to_string(max_event_bytes_) + " bytes");
      line_.append(bytes.substr(i));
      return;
    }
    // Avoid a copy when the whole line is inside this piece (the common case).
    if (line_.empty()) {
      on_line(bytes.substr(i, end - i), out);
    } else {
      line_.append(bytes.substr(i, end - i));
      std::string line = std::move(line_);
      line_.clear();
      on_line(line, out);
    }
    if (bytes[end] == '\r') {
      if (end + 1 == bytes.size()) {
        skip_lf_ = true;  // the \n of a CRLF may be the first byte of the next piece
        return;
      }
      if (bytes[end + 1] == '\n')
        ++end;
    }
    i = end + 1;
  }
}

void SseParser::on_line(std::string_view line, std::vector<SseItem>& out) {
  if (line.empty()) {
    dispatch(out);
    return;
  }
  if (line.front() == ':') {
    out.push_back(SseItem{SseItemKind::comment, std::string(line.substr(1)), {}});
    return;
  }
  std::string_view field = line;
  std::string_view value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_bytes_)
      throw std::length_error("SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes");
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
  // id, retry and unknown fields are irrelevant to a single request/response stream.
}

void SseParser::dispatch(std::vector<SseItem>& out) {
  if (has_data_) {
    data_.pop_back();  // the \n appended after the last data line
    if (data_ == "[DONE]")
      out.push_back(SseItem{SseItemKind::done, std::move(data_), std::move(event_)});
    else
      out.push_back(SseItem{SseItemKind::event, std::move(data_), std::move(event_)});
  }
  data_.clear();
  event_.clear();
  has_data_ = false;
}

} // namespace acp::net
