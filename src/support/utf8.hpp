// The one UTF-8 decoder. Malformed input follows the Unicode "maximal subpart" rule that
// JavaScript's TextDecoder uses: each maximal prefix of a valid sequence (or a lone bad byte)
// decodes as one U+FFFD. Overlong forms, surrogates and code points above U+10FFFF are malformed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace acp::support {

struct DecodedCodePoint {
  char32_t cp = 0;         ///< U+FFFD when !valid
  std::size_t length = 1;  ///< bytes consumed, >= 1 (so a scan always advances), never past the end
  bool valid = true;
};

/// Decodes the code point starting at s[i] (i < s.size()).
DecodedCodePoint decode_utf8(std::string_view s, std::size_t i);

/// Appends the UTF-8 encoding of the code point `c` (at most U+10FFFF) to `out`.
void append_utf8(std::string& out, char32_t c);

/// Whether `s` is well-formed UTF-8.
bool valid_utf8(std::string_view s);

/// Offset of the first ill-formed sequence in `s`, s.size() when there is none.
std::size_t first_invalid_utf8(std::string_view s);

/// Bytes from outside (a command's output, a file, a file name, another program's message) made
/// text: each ill-formed sequence becomes U+FFFD, one per maximal subpart as decode_utf8 reads it
/// (so a JavaScript TextDecoder reading the raw bytes shows the same text). Returns whether
/// anything was replaced; well-formed input is left as it is, without a copy.
bool replace_invalid_utf8(std::string& s);

/// replace_invalid_utf8 on a copy.
std::string valid_utf8_text(std::string_view s);

/// The largest code-point boundary at or before `pos` (s.size() for any pos past the end): `pos`
/// unless it falls inside a sequence, then the sequence's first byte. Ill-formed input is cut the
/// way decode_utf8 reads it: a maximal subpart (one U+FFFD) is never split, a stray continuation
/// byte is a unit of its own. So pieces cut at boundaries decode to exactly the whole's code points.
std::size_t utf8_floor(std::string_view s, std::size_t pos);

/// The smallest code-point boundary at or after `pos` (s.size() for any pos past the end).
std::size_t utf8_ceil(std::string_view s, std::size_t pos);

} // namespace acp::support
