#include "refs/projection.hpp"

namespace acp::refs {
namespace {

const boost::json::string* string_at(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

bool source_kind_is(const boost::json::value* source, std::string_view kind) {
  if (!source || !source->is_object()) return false;
  auto* k = string_at(source->get_object(), "kind");
  return k && *k == kind;
}

// textContent(): the `text` of every {type:"text", text:<string>} block, joined with "\n". Empty texts
// still contribute their separator, exactly as Array.join does.
std::string_view text_content(const boost::json::value* content, ProjectedConversation& out) {
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
  auto joined = std::make_unique<std::string>();
  bool first = true;
  for (const auto& block : content->get_array()) {
    if (!block.is_object()) continue;
    auto* type = string_at(block.get_object(), "type");
    auto* text = string_at(block.get_object(), "text");
    if (!type || *type != "text" || !text) continue;
    if (!first) joined->push_back('\n');
    first = false;
    joined->append(text->data(), text->size());
  }
  std::string_view view = *joined;
  out.joined_storage.push_back(std::move(joined));
  return view;
}

} // namespace

bool is_compact_checkpoint_source(const boost::json::value* source) {
  if (!source_kind_is(source, "plugin")) return false;
  auto* plugin = string_at(source->get_object(), "plugin");
  return plugin && *plugin == "compact";
}

ProjectedConversation project(const std::vector<boost::json::object>& events, WorkCounter* counter) {
  ProjectedConversation out;
  if (counter) counter->events_visited += events.size();
  out.items.reserve(events.size());
  for (const auto& event : events) {
    auto* type = string_at(event, "type");
    auto* data_value = event.if_contains("data");
    if (!type || !data_value || !data_value->is_object()) continue;
    const auto& data = data_value->get_object();
    ProjectedItem item;
    if (*type == "user/message") {
      const boost::json::value* source = data.if_contains("source");
      item.checkpoint = is_compact_checkpoint_source(source);
      if (!item.checkpoint && !source_kind_is(source, "user")) continue;
    } else if (*type == "steering/message") {
      if (!source_kind_is(data.if_contains("source"), "user")) continue;
    } else if (*type == "assistant/message") {
      item.role = Role::assistant;
    } else {
      continue;
    }
    item.text = text_content(data.if_contains("content"), out);
    if (item.text.empty()) continue;
    out.items.push_back(item);
  }
  return out;
}

} // namespace acp::refs
