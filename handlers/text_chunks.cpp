#include "handlers/text_chunks.hpp"

#include "refs/json_string.hpp"
#include "support/utf8.hpp"

namespace acp::handlers {

namespace {

// A cut at `end` moved back to a code-point boundary, or past the first code point when that
// would leave nothing.
std::string_view cut_at(std::string_view text, std::size_t end) {
  std::size_t cut = support::utf8_floor(text, end);
  if (cut == 0 && !text.empty()) cut = support::decode_utf8(text, 0).length;
  return text.substr(0, cut);
}

} // namespace

std::string_view first_utf8_piece(std::string_view text, std::size_t max) {
  return text.size() <= max ? text : cut_at(text, max);
}

std::string_view first_json_piece(std::string_view text, std::size_t budget) {
  // A byte escapes to at most six: short text needs no measuring.
  if (text.size() <= budget / 6) return text;
  const std::size_t fits = refs::json_escaped_prefix(text, budget);
  return fits == text.size() ? text : cut_at(text, fits);
}

namespace {

using Visit = std::function<void(protocol::SessionUpdate&&)>;

template <class Chunk> bool split_chunk(protocol::SessionUpdate& update, std::size_t budget, const Visit& fn) {
  auto* chunk = std::get_if<Chunk>(&update);
  if (!chunk) return false;
  auto* text = std::get_if<protocol::TextContent>(&chunk->content);
  if (!text || first_json_piece(text->text, budget).size() == text->text.size()) return false;
  const std::string whole = std::move(text->text);
  std::string_view rest = whole;
  while (!rest.empty()) {
    std::string_view piece = first_json_piece(rest, budget);
    Chunk part = *chunk;
    std::get<protocol::TextContent>(part.content).text = std::string(piece);
    fn(std::move(part));
    rest.remove_prefix(piece.size());
  }
  return true;
}

} // namespace

void for_each_split(protocol::SessionUpdate update, std::size_t budget, const Visit& fn) {
  if (split_chunk<protocol::UserMessageChunk>(update, budget, fn) ||
      split_chunk<protocol::AgentMessageChunk>(update, budget, fn) ||
      split_chunk<protocol::AgentThoughtChunk>(update, budget, fn))
    return;
  fn(std::move(update));
}

} // namespace acp::handlers
