#include "support/hex.hpp"

namespace acp::support {

void append_hex(std::string& out, std::uint32_t value, int digits, HexCase letters) {
  const char* alphabet = letters == HexCase::lower ? "0123456789abcdef" : "0123456789ABCDEF";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(alphabet[(value >> shift) & 0xF]);
}

std::string hex_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_hex(out, static_cast<unsigned char>(c), 2);
  return out;
}

} // namespace acp::support
