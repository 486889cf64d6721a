#include "llm/openai/chat_request.hpp"

#include "llm/token_estimate.hpp"
#include "support/image.hpp"
#include "support/utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>

namespace acp::llm {

std::vector<Message> merge_consecutive_user_messages(const std::vector<Message>& messages) {
  std::vector<Message> out;
  out.reserve(messages.size());
  for (const auto& m : messages) {
    if (m.role == Role::user && !out.empty() && out.back().role == Role::user) {
      out.back().text += "\n\n";
      const std::size_t shift = out.back().text.size();
      out.back().text += m.text;
      for (MessageImage image : m.images) {
        image.at += shift;
        out.back().images.push_back(std::move(image));
      }
    } else {
      out.push_back(m);
    }
  }
  return out;
}

bool has_consecutive_user_messages(const std::vector<Message>& messages) {
  for (std::size_t i = 1; i < messages.size(); ++i)
    if (messages[i].role == Role::user && messages[i - 1].role == Role::user)
      return true;
  return false;
}

namespace {

// Appends `s` as a JSON string, streamed through Boost.JSON's serializer (its escaping, no copy of s).
void append_json_string(std::string& out, std::string_view s) {
  boost::json::serializer sr;
  sr.reset(boost::json::string_view(s.data(), s.size()));
  char buf[16384];
  while (!sr.done())
    out.append(sr.read(buf, sizeof buf));
}

bool has_loaded_image(const Message& m) {
  for (const auto& image : m.images)
    if (image.data) return true;
  return false;
}

// A user message with images as content parts, in the message's order: its text around each
// loaded image, and the image as a data: URL (an image not loaded keeps its placeholder text).
void append_parts(std::string& out, const Message& m) {
  out += '[';
  bool first = true;
  std::size_t from = 0;
  auto text_part = [&](std::size_t to) {
    if (to <= from) return;
    if (!first) out += ',';
    out += "{\"type\":\"text\",\"text\":";
    append_json_string(out, std::string_view(m.text).substr(from, to - from));
    out += '}';
    first = false;
  };
  for (const auto& image : m.images) {
    if (!image.data || image.at < from || image.at + image.length > m.text.size()) continue;
    text_part(image.at);
    if (!first) out += ',';
    out += "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:";
    out += image.media_type;
    out += ";base64,";
    out += support::base64_encode(*image.data);
    out += "\"}}";
    first = false;
    from = image.at + image.length;
  }
  text_part(m.text.size());
  out += ']';
}

} // namespace

// Written directly into one string reserved for it, the same text as serializing the JSON object
// {model?, messages: [{role, [tool_call_id], content, [tool_calls]}], max_tokens?, stream, stream_options}:
// conversations may be tens of megabytes, so neither a JSON copy of them nor a growing buffer's
// reallocations are wanted.
std::string build_chat_request_body(std::string_view model, const std::vector<Message>& messages,
                                    std::optional<std::int64_t> max_tokens, const std::vector<ToolDefinition>& tools) {
  std::size_t estimate = 128 + model.size();
  for (const auto& t : tools) estimate += 64 + t.name.size() + t.description.size() * 2 + t.parameters.size();
  for (const auto& m : messages) {
    std::size_t bytes = message_bytes(m) + 64 * m.tool_calls.size();
    for (const auto& image : m.images)
      if (image.data) bytes += image.data->size() / 3 * 4 + 64;
    estimate += bytes + bytes / 16 + 60;  // a little room for escapes
  }
  std::string out;
  out.reserve(estimate);
  out += '{';
  if (!model.empty()) {
    out += "\"model\":";
    append_json_string(out, model);
    out += ',';
  }
  out += "\"messages\":[";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i) out += ',';
    const Message& m = messages[i];
    out += "{\"role\":\"";
    out += role_name(m.role);
    out += '"';
    if (m.role == Role::tool) {
      out += ",\"tool_call_id\":";
      append_json_string(out, m.tool_call_id);
    }
    out += ",\"content\":";
    if (m.role == Role::user && has_loaded_image(m)) append_parts(out, m);
    else append_json_string(out, m.text);
    if (!m.tool_calls.empty()) {
      out += ",\"tool_calls\":[";
      for (std::size_t c = 0; c < m.tool_calls.size(); ++c) {
        if (c) out += ',';
        out += "{\"id\":";
        append_json_string(out, m.tool_calls[c].id);
        out += ",\"type\":\"function\",\"function\":{\"name\":";
        append_json_string(out, m.tool_calls[c].name);
        out += ",\"arguments\":";
        append_json_string(out, m.tool_calls[c].arguments);
        out += "}}";
      }
      out += ']';
    }
    out += '}';
  }
  out += ']';
  if (!tools.empty()) {
    out += ",\"tools\":[";
    for (std::size_t t = 0; t < tools.size(); ++t) {
      if (t) out += ',';
      out += "{\"type\":\"function\",\"function\":{\"name\":";
      append_json_string(out, tools[t].name);
      out += ",\"description\":";
      append_json_string(out, tools[t].description);
      out += ",\"parameters\":";
      out += tools[t].parameters.empty() ? std::string_view("{\"type\":\"object\",\"properties\":{}}") : std::string_view(tools[t].parameters);
      out += "}}";
    }
    out += ']';
  }
  if (max_tokens) out += ",\"max_tokens\":" + std::to_string(*max_tokens);
  out += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
  // Its strings are text where they enter (tool results, stored logs, the model's own output);
  // should one have slipped through, the server still gets JSON text (a scan, no copy when valid).
  support::replace_invalid_utf8(out);
  return out;
}

} // namespace acp::llm
