#include "refs/types.hpp"

namespace acp::refs {

boost::json::object Candidate::to_json() const {
  boost::json::object o;
  o["sessionId"] = session_id;
  o["label"] = label;
  if (cwd) o["cwd"] = *cwd;
  o["createdAt"] = created_at;
  return o;
}

boost::json::object AdditionalContext::to_json() const {
  boost::json::object o;
  o["source"] = source;
  boost::json::object block;
  block["type"] = "text";
  block["text"] = prompt;
  o["content"] = boost::json::array{std::move(block)};
  return o;
}

boost::json::object PreparedMessage::to_json() const {
  boost::json::object o;
  o["content"] = content;
  if (additional_context) o["additionalContext"] = additional_context->to_json();
  return o;
}

} // namespace acp::refs
