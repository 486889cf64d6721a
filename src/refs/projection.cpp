#include "refs/projection.hpp"

#include <cstring>
#include <memory>

namespace acp::refs {
namespace {

// Event objects have a handful of members, and projection visits every event of a source: a plain
// scan comparing lengths first beats the library's find() (which dominated the profile) severalfold.
template <std::size_t N>
const boost::json::value* member(const boost::json::object& o, const char (&key)[N]) {
  constexpr std::size_t len = N - 1;
  for (const auto& kv : o) {
    boost::json::string_view k = kv.key();
    if (k.size() == len && std::memcmp(k.data(), key, len) == 0) return &kv.value();
  }
  return nullptr;
}

template <std::size_t N>
const boost::json::string* string_at(const boost::json::object& o, const char (&key)[N]) {
  auto* v = member(o, key);
  return v ? v->if_string() : nullptr;
}

template <std::size_t N>
bool source_kind_is(const boost::json::value* source, const char (&kind)[N]) {
  if (!source || !source->is_object()) return false;
  auto* k = string_at(source->get_object(), "kind");
  return k && *k == std::string_view(kind, N - 1);
}

// textContent(): the `text` of every {type:"text", text:<string>} block, joined with "\n". Empty texts
// still contribute their separator, exactly as Array.join does.
std::string_view text_content(const boost::json::value* content, std::string& joined) {
  if (!content || !content->is_array()) return {};
  const boost::json::string* single = nullptr;
  std::size_t count = 0;
  for (const auto& block : content->get_array()) {
    if (!block.is_object()) continue;
    auto* type = string_at(block.get_object(), "type");
    auto* text = string_at(block.get_object(), "text");
    if (!type || *type != "text" || !text) continue;
    if (++count == 1) single = text;
  }
  if (count == 0) return {};
  if (count == 1) return std::string_view(single->data(), single->size());
  joined.clear();
  bool first = true;
  for (const auto& block : content->get_array()) {
    if (!block.is_object()) continue;
    auto* type = string_at(block.get_object(), "type");
    auto* text = string_at(block.get_object(), "text");
    if (!type || *type != "text" || !text) continue;
    if (!first) joined.push_back('\n');
    first = false;
    joined.append(text->data(), text->size());
  }
  return joined;
}

} // namespace

bool is_compact_checkpoint_source(const boost::json::value* source) {
  if (!source_kind_is(source, "plugin")) return false;
  auto* plugin = string_at(source->get_object(), "plugin");
  return plugin && *plugin == "compact";
}

std::optional<ProjectedItem> project_event(const boost::json::object& event, std::string& joined) {
  auto* type = string_at(event, "type");
  auto* data_value = member(event, "data");
  if (!type || !data_value || !data_value->is_object()) return std::nullopt;
  const auto& data = data_value->get_object();
  ProjectedItem item;
  if (*type == "user/message") {
    const boost::json::value* source = member(data, "source");
    item.checkpoint = is_compact_checkpoint_source(source);
    if (!item.checkpoint && !source_kind_is(source, "user")) return std::nullopt;
  } else if (*type == "steering/message") {
    if (!source_kind_is(member(data, "source"), "user")) return std::nullopt;
  } else if (*type == "assistant/message") {
    item.role = Role::assistant;
  } else {
    return std::nullopt;
  }
  item.text = text_content(member(data, "content"), joined);
  if (item.text.empty()) return std::nullopt;
  return item;
}

ProjectedConversation project(const std::vector<boost::json::object>& events, WorkCounter* counter) {
  ProjectedConversation out;
  if (counter) counter->events_visited += events.size();
  out.items.reserve(events.size());
  std::string joined;
  for (const auto& event : events) {
    auto item = project_event(event, joined);
    if (!item) continue;
    if (item->text.data() == joined.data()) {  // joined from several blocks: keep it alive
      out.joined_storage.push_back(std::make_unique<std::string>(std::move(joined)));
      item->text = *out.joined_storage.back();
      joined = std::string();
    }
    if (auto* seq = member(event, "seq"); seq && seq->is_int64()) item->seq = seq->get_int64();
    out.items.push_back(*item);
  }
  return out;
}

std::optional<std::size_t> anchor_by_item_seqs(const std::vector<ProjectedItem>& items, std::int64_t seq) {
  if (items.empty()) return std::nullopt;
  std::optional<std::size_t> after;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].seq == seq) return i;
    if (items[i].seq > seq && (!after || items[i].seq < items[*after].seq)) after = i;
  }
  return after ? *after : items.size() - 1;
}

ProjectedSource project_snapshot(const store::SurfaceSnapshot& snapshot) {
  ProjectedSource out;
  out.session_id = snapshot.session.id;
  out.cwd = snapshot.session.cwd;
  out.captured_through_seq = snapshot.capturedThroughSeq;
  out.conversation = project(snapshot.events);
  for (auto& item : out.conversation.items) {
    out.conversation.joined_storage.push_back(std::make_unique<std::string>(item.text));
    item.text = *out.conversation.joined_storage.back();
  }
  return out;
}

} // namespace acp::refs
