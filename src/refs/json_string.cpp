#include "refs/json_string.hpp"

#include "support/hex.hpp"

#include <cstdint>
#include <cstring>

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
      out += "\\u";
      support::append_hex(out, c, 4);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

} // namespace

namespace {

// Extra bytes each byte costs once escaped, as a table so the per-byte step is branch-free.
struct ExtraTable {
  unsigned char extra[256];
  constexpr explicit ExtraTable(bool tag_safe) : extra() {
    for (int c = 0; c < 256; ++c)
      extra[c] = static_cast<unsigned char>(escaped_size(static_cast<unsigned char>(c), tag_safe) - 1);
  }
};
constexpr ExtraTable kExtra(true);
constexpr ExtraTable kPlainExtra(false);

constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighs = 0x8080808080808080ull;

// Whether any byte of w is < 0x20, '"', '\\' or '<' (exact: the classic has-zero-byte tests).
inline bool word_needs_escape(std::uint64_t w) {
  auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return (below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) | has_zero(w ^ (kOnes * '<'))) != 0;
}

// Escaped size of `text`, quotes included. Most text needs no escaping: test eight bytes at a time
// and only look closer at words that do (the test is the tag-safe one: a `<` only costs a closer look).
std::size_t escaped_json_size(std::string_view text, const ExtraTable& table) {
  std::size_t size = 2 + text.size();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  for (; end - p >= 8; p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if (!word_needs_escape(w)) continue;
    for (int k = 0; k < 8; ++k) size += table.extra[p[k]];
  }
  for (; p < end; ++p) size += table.extra[*p];
  return size;
}

} // namespace

std::size_t tag_safe_json_size(std::string_view text, WorkCounter* counter) {
  if (counter) counter->bytes_measured += text.size();
  return escaped_json_size(text, kExtra);
}

std::size_t json_string_size(std::string_view text) { return escaped_json_size(text, kPlainExtra); }

std::size_t json_escaped_prefix(std::string_view text, std::size_t budget) {
  const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
  const auto* p = begin;
  const auto* end = p + text.size();
  std::size_t used = 0;
  while (p < end) {
    if (end - p >= 8 && budget - used >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      if (!word_needs_escape(w)) {
        used += 8;
        p += 8;
        continue;
      }
    }
    const std::size_t cost = 1 + kPlainExtra.extra[*p];
    if (cost > budget - used) break;
    used += cost;
    ++p;
  }
  return static_cast<std::size_t>(p - begin);
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
