// ASCII case for protocol tokens (URL schemes, header values, option names): the one home of the
// byte-wise lowercasing. Text a person wrote is lowercased by ICU instead (en-US, refs/).
#pragma once

#include <string>
#include <string_view>

namespace acp::support {

constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

/// Whether `s` begins with `prefix` ignoring ASCII case (`prefix` in lowercase).
constexpr bool starts_with_ascii_nocase(std::string_view s, std::string_view prefix) noexcept {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (ascii_lower(s[i]) != prefix[i]) return false;
  return true;
}

} // namespace acp::support
