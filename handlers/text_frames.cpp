#include "handlers/text_frames.hpp"

#include "handlers/text_chunks.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"
#include "refs/json_string.hpp"
#include "support/utf8.hpp"

#include <boost/json/serializer.hpp>

#include <algorithm>
#include <tuple>

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

const TextChunkFrames::Template& TextChunkFrames::template_for(std::size_t kind, std::string_view message_id) {
  Template& t = templates_[kind];
  // Made again when the message changes: once per message, not per chunk.
  if (t.ready && t.message_id == message_id) return t;
  t = Template{};
  t.message_id = std::string(message_id);
  SessionNotification note{session_id_, with_text(kind, std::string(kPlaceholder), message_id), std::nullopt};
  if (auto parts = split_at_placeholder(
          jsonrpc::serialize_notification(methods::session_update, wire::encode(note)), kPlaceholder)) {
    std::tie(t.prefix, t.suffix) = std::move(*parts);
    t.usable = true;
  }
  t.ready = true;
  return t;
}

std::size_t TextChunkFrames::text_budget() {
  if (text_budget_) return text_budget_;
  std::size_t envelope = 0;
  for (std::size_t kind = 0; kind < templates_.size(); ++kind) {
    const Template& t = template_for(kind, kBudgetMessageId);
    // Without a template the general path writes the frame: the same envelope, estimated generously.
    const std::size_t bytes = t.usable ? t.prefix.size() + t.suffix.size()
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
  const Template& t = template_for(kind, message_id);
  if (!t.usable) return std::nullopt;  // the caller takes the general path

  // One allocation for a frame of ordinary text: room for the text, its quotes and some escapes,
  // and the suffix; the serializer writes into the reserved capacity.
  const std::size_t n = text.size();
  std::string out;
  out.reserve(t.prefix.size() + n + n / 8 + 64 + t.suffix.size());
  out += t.prefix;
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(text.data(), n));
  while (!sr.done()) {
    const std::size_t used = out.size();
    if (out.capacity() - used < 64 + t.suffix.size()) out.reserve(out.capacity() * 2);
    const std::size_t room = out.capacity() - used - t.suffix.size();
    out.resize(used + room);
    out.resize(used + sr.read(out.data() + used, room).size());
  }
  out += t.suffix;
  support::replace_invalid_utf8(out);  // as jsonrpc::serialize_* do for every other frame
  return out;
}

} // namespace acp::handlers
