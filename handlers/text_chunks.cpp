#include "handlers/text_chunks.hpp"

namespace acp::handlers {

std::vector<std::string_view> split_utf8(std::string_view text, std::size_t max) {
  std::vector<std::string_view> out;
  while (text.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    if (cut == 0) cut = max;  // not UTF-8 at all: cut anyway rather than loop
    out.push_back(text.substr(0, cut));
    text.remove_prefix(cut);
  }
  out.push_back(text);
  return out;
}

namespace {

template <class Chunk> bool split_chunk(protocol::SessionUpdate& update, std::vector<protocol::SessionUpdate>& out) {
  auto* chunk = std::get_if<Chunk>(&update);
  if (!chunk) return false;
  auto* text = std::get_if<protocol::TextContent>(&chunk->content);
  if (!text || text->text.size() <= kMaxChunkBytes) return false;
  std::string whole = std::move(text->text);
  for (std::string_view piece : split_utf8(whole)) {
    Chunk part = *chunk;
    std::get<protocol::TextContent>(part.content).text = std::string(piece);
    out.push_back(std::move(part));
  }
  return true;
}

} // namespace

void append_split(protocol::SessionUpdate update, std::vector<protocol::SessionUpdate>& out) {
  if (split_chunk<protocol::UserMessageChunk>(update, out) || split_chunk<protocol::AgentMessageChunk>(update, out) ||
      split_chunk<protocol::AgentThoughtChunk>(update, out))
    return;
  out.push_back(std::move(update));
}

} // namespace acp::handlers
