// Byte-identical session/update frames for plain text chunks without building JSON trees.
//
// Replays are mostly text deltas: for each, the general path builds a SessionUpdate, encodes it into
// a json::value tree (wire::encode), wraps it in a notification object and serialises that. A
// profile of session/load on a 50 MB log showed allocation and tree building dominating the
// server's CPU, so a user/agent/thought chunk holding only text is written here instead as a
// prefix + the JSON-escaped text + a suffix. The prefix and suffix come from serialising one such
// notification through the general path (so key order and layout cannot drift from it), once per
// kind; the text is escaped by Boost.JSON's own serializer straight into the frame.
#pragma once

#include "protocol/types/updates.hpp"

#include <array>
#include <optional>
#include <string>

namespace acp::handlers {

class TextChunkFrames {
public:
  explicit TextChunkFrames(std::string session_id) : session_id_(std::move(session_id)) {}

  /// The frame jsonrpc::serialize_notification(session/update, wire::encode(note)) would give, when
  /// `update` is a user, agent or thought chunk of plain text (no annotations, _meta or messageId);
  /// nullopt for anything else.
  std::optional<std::string> frame(const protocol::SessionUpdate& update);
  /// The same for a chunk of plain `text` of the kind `kind` (variant index: 0 user, 1 agent,
  /// 2 thought), without building the update.
  std::optional<std::string> frame_text(std::size_t kind, std::string_view text);

private:
  struct Template {
    std::string prefix, suffix;
    bool ready = false;
  };
  const Template& template_for(std::size_t kind);

  std::string session_id_;
  std::array<Template, 3> templates_;  ///< by variant index: user, agent, thought chunk
};

} // namespace acp::handlers
