#include "handlers/text_chunks.hpp"

#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"
#include "refs/json_string.hpp"
#include "store/event_model.hpp"
#include "support/utf8.hpp"

#include <algorithm>

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

// A message that has no place in the log (a command's answer) is a message of its own.
template <class Chunk> void give_message_id(protocol::SessionUpdate& update) {
  if (auto* chunk = std::get_if<Chunk>(&update); chunk && !chunk->messageId) chunk->messageId = store::random_uuid();
}

} // namespace

void for_each_split(protocol::SessionUpdate update, std::size_t budget, const Visit& fn) {
  give_message_id<protocol::UserMessageChunk>(update);
  give_message_id<protocol::AgentMessageChunk>(update);
  give_message_id<protocol::AgentThoughtChunk>(update);
  if (split_chunk<protocol::UserMessageChunk>(update, budget, fn) ||
      split_chunk<protocol::AgentMessageChunk>(update, budget, fn) ||
      split_chunk<protocol::AgentThoughtChunk>(update, budget, fn))
    return;
  fn(std::move(update));
}

namespace {

std::size_t escaped_size(std::string_view text) { return refs::json_string_size(text) - 2; }

constexpr std::string_view kNoteHead = "\n\u2026 (", kNoteTail = " more bytes not shown)";

std::string note(std::size_t dropped) { return std::string(kNoteHead) + std::to_string(dropped) + std::string(kNoteTail); }

// A text cut before ends with its note: removes it and returns the bytes it counted (0: none).
std::size_t strip_note(std::string& text) {
  if (!text.ends_with(kNoteTail)) return 0;
  const std::size_t head = text.rfind(kNoteHead);
  if (head == std::string::npos) return 0;
  const std::size_t from = head + kNoteHead.size(), to = text.size() - kNoteTail.size();
  if (to <= from || to - from > 18) return 0;
  std::size_t n = 0;
  for (std::size_t i = from; i < to; ++i) {
    if (text[i] < '0' || text[i] > '9') return 0;
    n = n * 10 + static_cast<std::size_t>(text[i] - '0');
  }
  text.resize(head);
  return n;
}

// Cuts `text` so that its frame shrinks by at least `excess` bytes, noting how much is left out
// (a text cut before is cut again as the whole it stands for: one note counts both cuts).
void cut(std::string& text, std::size_t excess) {
  constexpr std::size_t kNoteRoom = 64;  // the note below, escaped, with any byte count
  const std::size_t earlier = strip_note(text);
  const std::size_t size = escaped_size(text);
  const std::size_t keep = size > excess + kNoteRoom ? size - excess - kNoteRoom : 0;
  const std::size_t kept = keep ? first_json_piece(text, keep).size() : 0;
  const std::size_t dropped = text.size() - kept + earlier;
  text.resize(kept);
  text += note(dropped);
}

namespace json = boost::json;

// The text of a card's rawOutput that may be cut: the string itself, or our {output, …}.
json::string* raw_text(std::optional<json::value>& raw) {
  if (!raw) return nullptr;
  if (raw->is_string()) return &raw->get_string();
  json::object* o = raw->if_object();
  json::value* output = o ? o->if_contains("output") : nullptr;
  return output && output->is_string() ? &output->get_string() : nullptr;
}

// One step towards a card that fits: false when nothing is left worth cutting.
template <class Card> bool shrink_card(Card& card, std::size_t excess) {
  if (card.rawInput) {  // what the title and content show, again, for debugging
    card.rawInput.reset();
    return true;
  }
  json::string* raw = raw_text(card.rawOutput);
  if (card.rawOutput && !raw) {  // not ours: nothing in it can be cut
    card.rawOutput.reset();
    return true;
  }
  // The largest part is cut, down to the size of the next largest when that is enough: cutting
  // the largest by the whole excess could leave the content empty beside a whole rawOutput.
  protocol::ToolCallContent* largest = nullptr;
  std::size_t largest_size = 0, second_size = 0;
  auto consider = [&](protocol::ToolCallContent* item, std::size_t size) {
    if (size > largest_size) {
      second_size = largest_size;
      largest = item;
      largest_size = size;
    } else {
      second_size = std::max(second_size, size);
    }
  };
  const std::size_t raw_size = raw ? escaped_size(*raw) : 0;
  consider(nullptr, raw_size);
  if (card.content) {
    for (auto& item : *card.content) {
      std::size_t size = 0;
      if (auto* diff = std::get_if<protocol::ToolDiff>(&item)) {
        size = escaped_size(diff->newText) + (diff->oldText ? escaped_size(*diff->oldText) : 0);
      } else if (auto* text = std::get_if<protocol::TextContent>(&std::get<protocol::ToolContent>(item).content)) {
        size = escaped_size(text->text);
      }
      consider(&item, size);
    }
  }
  if (largest_size <= 128) return false;
  const std::size_t gap = largest_size - second_size;
  const std::size_t amount = gap >= excess ? excess : std::max(gap, (excess + 1) / 2);
  if (!largest) {
    std::string text(raw->data(), raw->size());
    cut(text, amount);
    *raw = text;
  } else if (auto* diff = std::get_if<protocol::ToolDiff>(largest)) {
    // Half a diff would show a change that never happened: it is not shown at all.
    const std::size_t bytes = diff->newText.size() + (diff->oldText ? diff->oldText->size() : 0);
    *largest = protocol::ToolContent{protocol::TextContent{
        "The change to " + diff->path + " (" + std::to_string(bytes) + " bytes) is too large to show.", {}, {}}};
  } else {
    cut(std::get<protocol::TextContent>(std::get<protocol::ToolContent>(*largest).content).text, amount);
  }
  return true;
}

bool shrink(protocol::SessionUpdate& update, std::size_t excess) {
  if (auto* call = std::get_if<protocol::ToolCall>(&update)) return shrink_card(*call, excess);
  if (auto* result = std::get_if<protocol::ToolCallUpdate>(&update)) return shrink_card(*result, excess);
  if (auto* plan = std::get_if<protocol::Plan>(&update)) {
    auto largest = std::max_element(plan->entries.begin(), plan->entries.end(), [](const auto& a, const auto& b) {
      return escaped_size(a.content) < escaped_size(b.content);
    });
    if (largest == plan->entries.end() || escaped_size(largest->content) <= 128) return false;
    cut(largest->content, excess);
    return true;
  }
  if (auto* info = std::get_if<protocol::SessionInfoUpdate>(&update); info && info->title) {
    if (escaped_size(*info->title) <= 128) return false;
    cut(*info->title, excess);
    return true;
  }
  return false;
}

std::string serialized(const protocol::SessionNotification& note) {
  return jsonrpc::serialize_notification(methods::session_update, wire::encode(note));
}

} // namespace

std::string bounded_text(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::size_t kNoteRoom = 64;  // "\n… (N more bytes not shown)" with any N
  const std::string_view kept = text.substr(0, support::utf8_floor(text, max_bytes > kNoteRoom ? max_bytes - kNoteRoom : 0));
  return std::string(kept) + note(text.size() - kept.size());
}

std::string notification_frame(const protocol::SessionNotification& note) {
  std::string frame = serialized(note);
  if (frame.size() <= kMaxNotificationBytes) return frame;
  protocol::SessionNotification fitted = note;
  // Each step leaves out or cuts the largest part: a card of many large texts takes a few.
  for (int step = 0; step < 64 && frame.size() > kMaxNotificationBytes; ++step) {
    if (!shrink(fitted.update, frame.size() - kMaxNotificationBytes)) break;
    frame = serialized(fitted);
  }
  return frame;
}

} // namespace acp::handlers
