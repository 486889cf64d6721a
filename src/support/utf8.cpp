#include "support/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace acp::support {

DecodedCodePoint decode_utf8(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, true};
  // Length and the allowed range of the second byte (narrower after E0, ED, F0, F4: Unicode table 3-7).
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0xFFFD, 1, false};
  }
  for (std::size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {0xFFFD, k, false};
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) return {0xFFFD, k, false};
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, len, true};
}

std::size_t first_invalid_utf8(std::string_view s) {
  // Every frame, log line and model request is checked: ASCII, most of any text, goes 8 bytes at a time.
  constexpr std::uint64_t kHighBits = 0x8080808080808080ull;
  for (std::size_t i = 0; i < s.size();) {
    if (i + 8 <= s.size()) {
      std::uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & kHighBits) == 0) {
        i += 8;
        continue;
      }
    }
    auto d = decode_utf8(s, i);
    if (!d.valid) return i;
    i += d.length;
  }
  return s.size();
}

bool valid_utf8(std::string_view s) { return first_invalid_utf8(s) == s.size(); }

bool replace_invalid_utf8(std::string& s) {
  std::size_t i = first_invalid_utf8(s);
  if (i == s.size()) return false;
  std::string out;
  out.reserve(s.size() + 16);
  out.append(s, 0, i);
  while (i < s.size()) {
    auto d = decode_utf8(s, i);
    if (d.valid) out.append(s, i, d.length);
    else append_utf8(out, 0xFFFD);
    i += d.length;
  }
  s = std::move(out);
  return true;
}

std::string valid_utf8_text(std::string_view s) {
  std::string out(s);
  replace_invalid_utf8(out);
  return out;
}

std::size_t utf8_floor(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return s.size();
  auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  if (!continuation(pos)) return pos;  // ASCII or a lead byte always starts a unit
  // A unit is at most 4 bytes, so its start is at most 3 bytes back; decoding never takes a
  // non-continuation byte as a trailing byte, so the nearest one is where the unit holding pos starts.
  for (std::size_t back = 1; back <= 3 && back <= pos; ++back) {
    const std::size_t start = pos - back;
    if (continuation(start)) continue;
    return start + decode_utf8(s, start).length > pos ? start : pos;
  }
  return pos;  // a stray continuation byte: a unit of its own
}

std::size_t utf8_ceil(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return s.size();
  const std::size_t floor = utf8_floor(s, pos);
  return floor == pos ? floor : floor + decode_utf8(s, floor).length;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

} // namespace acp::support
