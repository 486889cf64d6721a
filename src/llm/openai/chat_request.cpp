#include "llm/openai/chat_request.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>

namespace acp::llm {

std::string_view role_name(Role role) noexcept {
  switch (role) {
  case Role::system:
    return "system";
  case Role::user:
    return "user";
  case Role::assistant:
    return "assistant";
  }
  return "user";
}

std::vector<Message> merge_consecutive_user_messages(const std::vector<Message>& messages) {
  std::vector<Message> out;
  out.reserve(messages.size());
  for (const auto& m : messages) {
    if (m.role == Role::user && !out.empty() && out.back().role == Role::user) {
      out.back().text += "\n\n";
      out.back().text += m.text;
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

} // namespace

// Written directly into one string reserved for it, the same text as serializing the JSON object
// {model?, messages: [{role, content}], max_tokens?, stream, stream_options}: conversations may be tens of
// megabytes, so neither a JSON copy of them nor a growing buffer's reallocations are wanted.
std::string build_chat_request_body(std::string_view model, const std::vector<Message>& messages,
                                    std::optional<std::int64_t> max_tokens) {
  std::size_t estimate = 128 + model.size();
  for (const auto& m : messages)
    estimate += m.text.size() + m.text.size() / 16 + 40;  // a little room for escapes
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
    out += "{\"role\":\"";
    out += role_name(messages[i].role);
    out += "\",\"content\":";
    append_json_string(out, messages[i].text);
    out += '}';
  }
  out += ']';
  if (max_tokens) out += ",\"max_tokens\":" + std::to_string(*max_tokens);
  out += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
  return out;
}

} // namespace acp::llm
