// The one hexadecimal encoder (digests, random names, cursors, JSON and file-name escapes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace acp::support {

enum class HexCase { lower, upper };

/// Appends the low `digits` nibbles of `value`, most significant first.
void append_hex(std::string& out, std::uint32_t value, int digits, HexCase letters = HexCase::lower);

/// Two lowercase hex digits per byte.
std::string hex_encode(std::string_view bytes);

} // namespace acp::support
