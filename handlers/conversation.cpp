#include "handlers/conversation.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;

namespace {

std::string_view str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

void add(std::vector<llm::Message>& out, llm::Role role, std::string text, bool merge) {
  if (text.empty()) return;
  if (merge && !out.empty() && out.back().role == role) {
    out.back().text += "\n" + text;
    return;
  }
  out.push_back({role, std::move(text)});
}

std::string assistant_text(const json::value& content) {
  std::string text;
  const auto* blocks = content.if_array();
  if (!blocks) return text;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block) continue;
    std::string_view type = str(*block, "type");
    std::string piece;
    if (type == "text") piece = std::string(str(*block, "text"));
    else if (type == "tool-call") {
      const auto* args = block->if_contains("arguments");
      std::string arguments = args && args->is_string() ? std::string(args->get_string())
                              : args                    ? json::serialize(*args)
                                                        : std::string();
      piece = "[tool " + std::string(str(*block, "name")) + "] " + arguments;
    }
    if (piece.empty()) continue;  // reasoning never goes back to the model as content
    if (!text.empty()) text += "\n";
    text += piece;
  }
  return text;
}

} // namespace

std::string content_text(const json::value& content) {
  std::string text;
  const auto* blocks = content.if_array();
  if (!blocks) return text;
  bool first = true;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block || str(*block, "type") != "text") continue;
    if (!first) text += "\n";
    text += str(*block, "text");
    first = false;
  }
  return text;
}

void append_surface_messages(const std::vector<json::object>& surface_events, std::vector<llm::Message>& out) {
  for (const auto& event : surface_events) {
    std::string_view type = str(event, "type");
    const auto* data_value = event.if_contains("data");
    if (!data_value || !data_value->is_object()) continue;
    const json::object& data = data_value->get_object();
    const json::value* content = data.if_contains("content");
    if (type == "user/message" || type == "steering/message") {
      if (content) add(out, llm::Role::user, content_text(*content), false);
    } else if (type == "assistant/message") {
      if (content) add(out, llm::Role::assistant, assistant_text(*content), true);
    } else if (type == "tool/result") {
      if (content) add(out, llm::Role::assistant, "[result] " + content_text(*content), true);
    }
  }
}

} // namespace acp::handlers
