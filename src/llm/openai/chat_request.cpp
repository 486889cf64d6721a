#include "llm/openai/chat_request.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

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

std::string build_chat_request_body(std::string_view model, const std::vector<Message>& messages,
                                    std::optional<std::int64_t> max_tokens) {
  boost::json::object body;
  if (!model.empty())
    body["model"] = model;
  boost::json::array msgs;
  msgs.reserve(messages.size());
  for (const auto& m : messages) {
    boost::json::object o;
    o["role"] = role_name(m.role);
    o["content"] = m.text;
    msgs.push_back(std::move(o));
  }
  body["messages"] = std::move(msgs);
  if (max_tokens) body["max_tokens"] = *max_tokens;
  body["stream"] = true;
  body["stream_options"] = boost::json::object{{"include_usage", true}};
  return boost::json::serialize(body);
}

} // namespace acp::llm
