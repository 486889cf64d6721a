#include "handlers/text_chunks.hpp"

namespace acp::handlers {

// The longest prefix of at most `max` bytes that does not end inside a UTF-8 sequence.
std::string_view first_utf8_piece(std::string_view text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  if (cut == 0) cut = max;  // not UTF-8 at all: cut anyway rather than loop
  return text.substr(0, cut);
}

namespace {

using Visit = std::function<void(protocol::SessionUpdate&&)>;

template <class Chunk> bool split_chunk(protocol::SessionUpdate& update, const Visit& fn) {
  auto* chunk = std::get_if<Chunk>(&update);
  if (!chunk) return false;
  auto* text = std::get_if<protocol::TextContent>(&chunk->content);
  if (!text || text->text.size() <= kMaxChunkBytes) return false;
  const std::string whole = std::move(text->text);
  std::string_view rest = whole;
  while (!rest.empty()) {
    std::string_view piece = first_utf8_piece(rest, kMaxChunkBytes);
    Chunk part = *chunk;
    std::get<protocol::TextContent>(part.content).text = std::string(piece);
    fn(std::move(part));
    rest.remove_prefix(piece.size());
  }
  return true;
}

} // namespace

void for_each_split(protocol::SessionUpdate update, const Visit& fn) {
  if (split_chunk<protocol::UserMessageChunk>(update, fn) || split_chunk<protocol::AgentMessageChunk>(update, fn) ||
      split_chunk<protocol::AgentThoughtChunk>(update, fn))
    return;
  fn(std::move(update));
}

void append_split(protocol::SessionUpdate update, std::vector<protocol::SessionUpdate>& out) {
  for_each_split(std::move(update), [&](protocol::SessionUpdate&& piece) { out.push_back(std::move(piece)); });
}

} // namespace acp::handlers
