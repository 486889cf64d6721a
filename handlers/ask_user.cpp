#include "handlers/ask_user.hpp"

#include "handlers/client_capabilities.hpp"
#include "protocol/client_call.hpp"
#include "protocol/methods.hpp"
#include "protocol/types/elicitation.hpp"
#include "protocol/wire.hpp"
#include "support/log.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace acp::handlers {

namespace json = boost::json;

namespace {
// The form's one field.
constexpr const char* kAnswerField = "answer";

std::string answer_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (const json::array* list = v.if_array()) {  // a multi-select: the choices, one per line
    std::string out;
    for (const json::value& item : *list) {
      if (!out.empty()) out += "\n";
      out += item.is_string() ? std::string(item.get_string()) : json::serialize(item);
    }
    return out;
  }
  return json::serialize(v);  // a number or a boolean, as written
}
} // namespace

bool client_elicits_forms(const json::object& client_capabilities) {
  const json::value* form = client_capability(client_capabilities, "elicitation", "form");
  return form && (form->is_object() || (form->is_bool() && form->get_bool()));
}

json::value elicitation_params(const std::string& session_id, const engine::UserQuestion& question) {
  protocol::CreateElicitationRequest req;
  req.sessionId = session_id;
  req.toolCallId = question.call_id;
  req.message = question.question;
  protocol::ElicitationStringProperty field;
  field.title = question.choices.empty() ? "Your answer" : "Your choice";
  if (!question.choices.empty()) field.enum_ = question.choices;
  req.requestedSchema.properties.emplace(kAnswerField, std::move(field));
  req.requestedSchema.required.push_back(kAnswerField);
  return wire::encode(req);
}

engine::UserAnswer read_elicitation_answer(const json::value& result, const std::vector<std::string>& choices) {
  using Kind = engine::UserAnswer::Kind;
  protocol::CreateElicitationResponse answer;
  try {
    answer = wire::decode<protocol::CreateElicitationResponse>(result);
  } catch (const std::exception& e) {
    return {Kind::failed, std::string("the client's answer is malformed: ") + e.what()};
  }
  if (answer.action == "decline") return {Kind::declined, {}};
  if (answer.action != "accept") return {Kind::dismissed, {}};
  const json::value* given = answer.content ? answer.content->if_contains(kAnswerField) : nullptr;
  if (!given || given->is_null()) return {Kind::dismissed, {}};
  // The form offered these and nothing else: what the model reads as the user's choice must be one.
  if (!choices.empty() &&
      (!given->is_string() || std::find(choices.begin(), choices.end(), given->get_string()) == choices.end()))
    return {Kind::failed, "the client's answer is not one of the choices offered"};
  return {Kind::answered, answer_text(*given)};
}

boost::asio::awaitable<engine::UserAnswer> ask_user(HandlerContext& ctx, std::string session_id,
                                                     engine::UserQuestion question) {
  using Kind = engine::UserAnswer::Kind;
  if (!ctx.channel.has_client()) co_return engine::UserAnswer{Kind::failed, "there is no client to ask"};
  json::value params = elicitation_params(session_id, question);
  try {
    auto asking = ctx.channel.call_client(session_id, std::string(methods::elicitation_create), std::move(params));
    json::value result = co_await std::move(asking);
    co_return read_elicitation_answer(result, question.choices);
  } catch (const protocol::ClientCallFailed& e) {
    log::warn("elicitation/create failed: " + std::string(e.what()));
    co_return engine::UserAnswer{Kind::failed, e.what()};
  } catch (const protocol::ClientCallAborted& e) {
    co_return engine::UserAnswer{e.cancelled() ? Kind::cancelled : Kind::failed, e.what()};
  }
}

} // namespace acp::handlers
