#include "handlers/message_id.hpp"

#include "support/sha256.hpp"

namespace acp::handlers {

std::string message_id(std::string_view session_id, std::string_view place) {
  support::Sha256 h;
  // Lengths first: no session id and place can run into another pair's.
  const std::string lengths = std::to_string(session_id.size()) + ":" + std::to_string(place.size()) + ":";
  h.update("dsh-acp/message-id\n").update(lengths).update(session_id).update(place);
  support::Sha256::Digest d = h.digest();
  d[6] = static_cast<unsigned char>((d[6] & 0x0f) | 0x80);  // version 8
  d[8] = static_cast<unsigned char>((d[8] & 0x3f) | 0x80);  // the RFC variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 0x0f];
  }
  return out;
}

std::string block_place(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t block) {
  return std::string(kind) + "/" + std::to_string(turn) + "/" + std::to_string(step) + "/" + std::to_string(block);
}

} // namespace acp::handlers
