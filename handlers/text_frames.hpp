// Byte-identical session/update frames for plain text chunks without building JSON trees.
//
// Replays and live turns are mostly text deltas: for each, the general path builds a SessionUpdate,
// encodes it into a json::value tree (wire::encode), wraps it in a notification object and
// serialises that. A profile of session/load on a 50 MB log showed allocation and tree building
// dominating the server's CPU, so a user/agent/thought chunk holding only text is written here
// instead as the pieces around its session id, text and message id, with those three escaped by
// Boost.JSON's own serializer straight into the frame. The pieces come from serialising one such
// notification through the general path with placeholders (so key order and layout cannot drift
// from it), once per kind and process. The same pieces say how much escaped text a frame of
// kMaxNotificationBytes holds.
#pragma once

#include "protocol/types/updates.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace acp::handlers {

/// What comes before and after the quoted `placeholder` in `frame` (its last occurrence: the text
/// is serialised after the session id); nullopt when the frame does not hold it.
std::optional<std::pair<std::string, std::string>> split_at_placeholder(std::string_view frame,
                                                                        std::string_view placeholder);

class TextChunkFrames {
public:
  explicit TextChunkFrames(std::string session_id);

  /// The frame jsonrpc::serialize_notification(session/update, wire::encode(note)) would give, when
  /// `update` is a user, agent or thought chunk of plain text (no annotations or _meta; a messageId
  /// or none); nullopt for anything else.
  std::optional<std::string> frame(const protocol::SessionUpdate& update);
  /// The same for a chunk of plain `text` of the kind `kind` (variant index: 0 user, 1 agent,
  /// 2 thought) with `message_id` ("" = none), without building the update.
  std::optional<std::string> frame_text(std::size_t kind, std::string_view text, std::string_view message_id = {});

  /// How many bytes the escaped text of one plain chunk of any kind may take (quotes not counted)
  /// for its frame to stay within kMaxNotificationBytes, with a messageId of ours (36 bytes): the
  /// split budget (for_each_split).
  std::size_t text_budget();

private:
  std::string session_id_;
  std::string session_literal_;  ///< the session id as a JSON string literal, quotes included
  std::size_t text_budget_ = 0;  ///< 0 until computed
};

} // namespace acp::handlers
