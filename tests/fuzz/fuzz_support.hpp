// Helpers shared by the fuzz targets: input splitting and property checks. Header-only so each
// target stays one translation unit (built by clang for libFuzzer and by the normal compiler for
// the corpus regression driver).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace dsh_fuzz {

/// Splits `in` at every `sep` byte (fields may be empty).
inline std::vector<std::string_view> split(std::string_view in, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = in.find(sep);
    out.push_back(in.substr(0, at));
    if (at == std::string_view::npos) return out;
    in.remove_prefix(at + 1);
  }
}

/// Piece sizes for feeding a stream incrementally, derived from `seed` so a run is reproducible.
/// Sizes 1..64 cover splits inside line ends, UTF-8 sequences and escapes.
inline std::vector<std::size_t> piece_sizes(std::size_t total, std::uint32_t seed) {
  std::vector<std::size_t> sizes;
  std::uint32_t x = seed * 2654435761u + 1;
  while (total > 0) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    std::size_t n = 1 + x % 64;
    if (n > total) n = total;
    sizes.push_back(n);
    total -= n;
  }
  return sizes;
}

/// A broken invariant is a crash: libFuzzer saves the input.
[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    std::uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      unsigned char b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return false;
    i += len;
  }
  return true;
}

} // namespace dsh_fuzz
