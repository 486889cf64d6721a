#include "handlers/text_frames.hpp"

#include "handlers/text_chunks.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"
#include "refs/json_string.hpp"
#include "support/utf8.hpp"

#include <boost/json/serializer.hpp>

#include <algorithm>
#include <array>

namespace acp::handlers {

using namespace protocol;

namespace {

// Stands for the text while the template is serialised; plain ASCII, so it is written as is.
constexpr std::string_view kPlaceholder = "dsh-text-placeholder-7f3a";

template <class Chunk>
const TextContent* plain_text(const Chunk& c) {
  if (c._meta) return nullptr;
  const auto* t = std::get_if<TextContent>(&c.content);
  return t && !t->annotations && !t->_meta ? t : nullptr;
}

// The budget is measured with an id of the length ours have (message_id.hpp).
constexpr std::string_view kBudgetMessageId = "00000000-0000-8000-8000-000000000000";

SessionUpdate with_text(std::size_t kind, std::string text, std::string_view message_id) {
  TextContent block{std::move(text), std::nullopt, std::nullopt};
  std::optional<std::string> id;
  if (!message_id.empty()) id = std::string(message_id);
  switch (kind) {
    case 0: return UserMessageChunk{std::move(block), std::move(id), {}};
    case 1: return AgentMessageChunk{std::move(block), std::move(id), {}};
    default: return AgentThoughtChunk{std::move(block), std::move(id), {}};
  }
}

} // namespace

std::optional<std::pair<std::string, std::string>> split_at_placeholder(std::string_view frame,
                                                                        std::string_view placeholder) {
  const std::string quoted = "\"" + std::string(placeholder) + "\"";
  const std::size_t at = frame.rfind(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  return std::pair{std::string(frame.substr(0, at)), std::string(frame.substr(at + quoted.size()))};
}

namespace {

// A kind's frame cut around its three strings, which are all a plain chunk's frames differ in:
// before the session id, between it and the text, between the text and the message id, and after
// it (with_id false: no messageId key, `before_id` empty). Built once per process from one
// notification serialised through the general path with placeholders, so key order and layout
// cannot drift from it; then a frame is four copies and three escaped strings, where building it
// again per prompt and message (a notification serialised each time) was ~7% of an echo prompt.
struct Shape {
  std::string before_session, before_text, before_id, after;
  bool usable = false;  ///< the placeholders were found in order: frame_text can write this kind
};

constexpr std::string_view kSessionPlaceholder = "dsh-session-placeholder-5c1e";
constexpr std::string_view kIdPlaceholder = "dsh-message-placeholder-9b2d";

Shape make_shape(std::size_t kind, bool with_id) {
  Shape s;
  SessionNotification note{std::string(kSessionPlaceholder),
                           with_text(kind, std::string(kPlaceholder), with_id ? kIdPlaceholder : std::string_view()),
                           std::nullopt};
  const std::string frame = jsonrpc::serialize_notification(methods::session_update, wire::encode(note));
  auto after_session = split_at_placeholder(frame, kSessionPlaceholder);
  if (!after_session) return s;
  auto after_text = split_at_placeholder(after_session->second, kPlaceholder);
  if (!after_text) return s;
  s.before_session = std::move(after_session->first);
  s.before_text = std::move(after_text->first);
  if (with_id) {
    auto after_id = split_at_placeholder(after_text->second, kIdPlaceholder);
    if (!after_id) return s;
    s.before_id = std::move(after_id->first);
    s.after = std::move(after_id->second);
  } else {
    s.after = std::move(after_text->second);
  }
  // Each placeholder once, in this order: any other layout is left to the general path.
  for (std::string_view piece : {s.before_session, s.before_text, s.before_id, s.after})
    for (std::string_view ph : {kSessionPlaceholder, kPlaceholder, kIdPlaceholder})
      if (piece.find(ph) != std::string_view::npos) return s;
  s.usable = true;
  return s;
}

// By kind (variant index) and whether the chunk has a message id.
const Shape& shape(std::size_t kind, bool with_id) {
  static const std::array<std::array<Shape, 2>, 3> shapes = [] {
    std::array<std::array<Shape, 2>, 3> out;
    for (std::size_t k = 0; k < out.size(); ++k)
      for (bool id : {false, true}) out[k][id] = make_shape(k, id);
    return out;
  }();
  return shapes[kind][with_id];
}

// Appends `text` as Boost.JSON's serializer writes a string (quotes included), as the general path would.
void append_string(std::string& out, std::string_view text) {
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(text.data(), text.size()));
  char buf[4096];
  while (!sr.done()) out.append(sr.read(buf, sizeof buf));
}

} // namespace

TextChunkFrames::TextChunkFrames(std::string session_id) : session_id_(std::move(session_id)) {
  append_string(session_literal_, session_id_);
}

std::size_t TextChunkFrames::text_budget() {
  if (text_budget_) return text_budget_;
  std::size_t envelope = 0;
  std::string id_literal;
  append_string(id_literal, kBudgetMessageId);
  for (std::size_t kind = 0; kind < 3; ++kind) {
    const Shape& t = shape(kind, true);
    // Without a template the general path writes the frame: the same envelope, estimated generously.
    const std::size_t bytes = t.usable ? t.before_session.size() + session_literal_.size() + t.before_text.size() +
                                             t.before_id.size() + id_literal.size() + t.after.size()
                                       : 256 + refs::json_string_size(session_id_);
    envelope = std::max(envelope, bytes + 2);  // + the text's quotes
  }
  // A session id near the frame limit leaves no room: the frames exceed it rather than never end.
  constexpr std::size_t kMinBudget = 64;
  text_budget_ = envelope + kMinBudget < kMaxNotificationBytes ? kMaxNotificationBytes - envelope : kMinBudget;
  return text_budget_;
}

std::optional<std::string> TextChunkFrames::frame(const SessionUpdate& update) {
  static_assert(std::is_same_v<std::variant_alternative_t<0, SessionUpdate>, UserMessageChunk> &&
                std::is_same_v<std::variant_alternative_t<1, SessionUpdate>, AgentMessageChunk> &&
                std::is_same_v<std::variant_alternative_t<2, SessionUpdate>, AgentThoughtChunk>);
  const TextContent* text = nullptr;
  const std::optional<std::string>* id = nullptr;
  auto take = [&](const auto& chunk) {
    text = plain_text(chunk);
    id = &chunk.messageId;
  };
  if (const auto* u = std::get_if<UserMessageChunk>(&update)) take(*u);
  else if (const auto* a = std::get_if<AgentMessageChunk>(&update)) take(*a);
  else if (const auto* r = std::get_if<AgentThoughtChunk>(&update)) take(*r);
  if (!text) return std::nullopt;
  return frame_text(update.index(), text->text, id->has_value() ? std::string_view(**id) : std::string_view());
}

std::optional<std::string> TextChunkFrames::frame_text(std::size_t kind, std::string_view text,
                                                       std::string_view message_id) {
  const Shape& t = shape(kind, !message_id.empty());
  if (!t.usable) return std::nullopt;  // the caller takes the general path

  // One allocation for a frame of ordinary text: room for the text, its quotes and some escapes,
  // and the rest of the frame; the serializer writes into the reserved capacity.
  const std::size_t n = text.size();
  const std::size_t tail = t.before_id.size() + message_id.size() + 16 + t.after.size();
  std::string out;
  out.reserve(t.before_session.size() + session_literal_.size() + t.before_text.size() + n + n / 8 + 64 + tail);
  out += t.before_session;
  out += session_literal_;
  out += t.before_text;
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(text.data(), n));
  while (!sr.done()) {
    const std::size_t used = out.size();
    if (out.capacity() - used < 64 + tail) out.reserve(out.capacity() * 2);
    const std::size_t room = out.capacity() - used - tail;
    out.resize(used + room);
    out.resize(used + sr.read(out.data() + used, room).size());
  }
  out += t.before_id;
  if (!message_id.empty()) append_string(out, message_id);
  out += t.after;
  support::replace_invalid_utf8(out);  // as jsonrpc::serialize_* do for every other frame
  return out;
}

} // namespace acp::handlers
