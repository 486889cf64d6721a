// The one UTF-8 decoder. Malformed input follows the Unicode "maximal subpart" rule that
// JavaScript's TextDecoder uses: each maximal prefix of a valid sequence (or a lone bad byte)
// decodes as one U+FFFD. Overlong forms, surrogates and code points above U+10FFFF are malformed.
#pragma once

#include <cstddef>
#include <string_view>

namespace acp::support {

struct DecodedCodePoint {
  char32_t cp = 0;         ///< U+FFFD when !valid
  std::size_t length = 1;  ///< bytes consumed, >= 1 (so a scan always advances), never past the end
  bool valid = true;
};

/// Decodes the code point starting at s[i] (i < s.size()).
DecodedCodePoint decode_utf8(std::string_view s, std::size_t i);

/// Whether `s` is well-formed UTF-8.
bool valid_utf8(std::string_view s);

} // namespace acp::support
