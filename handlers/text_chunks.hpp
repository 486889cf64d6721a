// Message text in session/update frames is split into chunks of at most 16 KiB of UTF-8, on
// code-point boundaries, so line-limited clients (the Python SDK reads at most 64 KiB per line) can
// read every notification (contracts §4).
#pragma once

#include "protocol/types/updates.hpp"

#include <functional>
#include <string_view>
#include <vector>

namespace acp::handlers {

inline constexpr std::size_t kMaxChunkBytes = 16 * 1024;

/// The first piece of `text` cut into pieces of at most `max` bytes, never inside a UTF-8 sequence;
/// taking pieces until the text is used up splits it (an empty text is one empty piece).
std::string_view first_utf8_piece(std::string_view text, std::size_t max = kMaxChunkBytes);

/// Appends `update` to `out`; a user, agent or thought chunk with longer text becomes several.
void append_split(protocol::SessionUpdate update, std::vector<protocol::SessionUpdate>& out);
/// The same, one piece at a time: each piece is made when `fn` is about to get it, so a long text
/// is never held twice (replay memory stays within twice the largest event).
void for_each_split(protocol::SessionUpdate update, const std::function<void(protocol::SessionUpdate&&)>& fn);

} // namespace acp::handlers
