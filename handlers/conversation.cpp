#include "handlers/conversation.hpp"

#include "store/records.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;
using store::string_at;

namespace {

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
    std::string_view type = string_at(*block, "type");
    std::string piece;
    if (type == "text") piece = std::string(string_at(*block, "text"));
    else if (type == "tool-call") {
      const auto* args = block->if_contains("arguments");
      std::string arguments = args && args->is_string() ? std::string(args->get_string())
                              : args                    ? json::serialize(*args)
                                                        : std::string();
      piece = "[tool " + std::string(string_at(*block, "name")) + "] " + arguments;
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
    if (!block || string_at(*block, "type") != "text") continue;
    if (!first) text += "\n";
    text += string_at(*block, "text");
    first = false;
  }
  return text;
}

void append_surface_messages(const std::vector<json::object>& surface_events, std::vector<llm::Message>& out) {
  for (const auto& event : surface_events) {
    std::string_view type = string_at(event, "type");
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
