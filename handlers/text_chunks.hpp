// No session/update frame we write exceeds kMaxNotificationBytes (32 KiB), so line-limited clients
// (the Python SDK reads at most 64 KiB per line) can read every one (docs/decisions.md#update-frames). Message text
// longer than a frame holds is split into several chunks of the same kind. Text is measured as it is
// written, JSON-escaped — an ESC of coloured terminal output takes six bytes (\u001b), a quote or
// backslash two — and cut on code-point boundaries: joined, the chunks are the text exactly.
// Other updates cannot be split (a tool_call_update's content replaces the card's), so a card, plan
// or title too large for a frame is shown cut, saying how much is not shown; the log keeps it whole.
#pragma once

#include "protocol/types/updates.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace acp::handlers {

inline constexpr std::size_t kMaxNotificationBytes = 32 * 1024;

/// The longest prefix of `text` of at most `max` bytes that does not end inside a UTF-8 sequence
/// (support::utf8_floor); the first code point when even that is longer, so a scan always advances.
std::string_view first_utf8_piece(std::string_view text, std::size_t max);

/// The longest prefix of `text` that does not end inside a UTF-8 sequence and whose JSON escaping
/// (quotes not counted) takes at most `budget` bytes; at least one code point of a non-empty text.
/// Taking pieces until the text is used up splits it.
std::string_view first_json_piece(std::string_view text, std::size_t budget);

/// Calls `fn` with `update`, or, for a user, agent or thought chunk whose text's escaping takes more
/// than `budget` bytes (TextChunkFrames::text_budget), with pieces of it in order. A chunk without a
/// messageId gets a fresh one first, so its pieces are one message. Each piece is made
/// when `fn` is about to get it, so a long text is never held twice (replay memory stays within
/// twice the largest event).
void for_each_split(protocol::SessionUpdate update, std::size_t budget,
                    const std::function<void(protocol::SessionUpdate&&)>& fn);

/// `text` if it takes at most `max_bytes`, else its longest prefix that ends on a code-point
/// boundary followed by `\n… (N more bytes not shown)`, the whole at most `max_bytes` (at least 64).
std::string bounded_text(std::string_view text, std::size_t max_bytes);

/// The session/update frame of `note`. One over kMaxNotificationBytes (a message chunk that was
/// not split aside) is made to fit: a card's rawInput is left out, then its largest texts —
/// content texts and rawOutput's `output` (a rawOutput of another shape is left out) — are cut
/// with a note of the bytes not shown, the largest first and towards equal sizes, so the content
/// keeps its share (a diff too large is replaced by such a note), as are a plan's entries and a
/// title.
std::string notification_frame(const protocol::SessionNotification& note);

} // namespace acp::handlers
