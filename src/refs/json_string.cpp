#include "refs/json_string.hpp"

namespace acp::refs {
namespace {

// Escaped length of one byte; multi-byte UTF-8 sequences are copied byte by byte (cost 1 each).
constexpr std::size_t escaped_size(unsigned char c, bool tag_safe) {
  if (c == '"' || c == '\\') return 2;
  if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 2;
  if (c < 0x20) return 6;
  if (c == '<' && tag_safe) return 6;
  return 1;
}

void append_escaped(std::string& out, std::string_view text, bool tag_safe) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the current run of bytes copied verbatim
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (escaped_size(c, tag_safe) == 1) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

} // namespace

std::size_t tag_safe_json_size(std::string_view text, WorkCounter* counter) {
  std::size_t size = 2;
  for (unsigned char c : text) size += escaped_size(c, true);
  if (counter) counter->bytes_measured += text.size();
  return size;
}

void append_tag_safe_json(std::string& out, std::string_view text, WorkCounter* counter) {
  std::size_t before = out.size();
  append_escaped(out, text, true);
  if (counter) counter->bytes_written += out.size() - before;
}

void append_json_string(std::string& out, std::string_view text) { append_escaped(out, text, false); }

std::string json_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_escaped(out, text, false);
  return out;
}

} // namespace acp::refs
