// The ask_user tool's question as ACP elicitation: a one-field form (a choice when the model gave
// choices, else free text) on the session and the asking tool call, and the answer read back.
#pragma once

#include "engine/ask_user.hpp"
#include "handlers/handler_context.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

namespace acp::handlers {

/// Whether the client said it renders form elicitations (`elicitation.form`, `{}` when it does).
bool client_elicits_forms(const boost::json::object& client_capabilities);

/// The request's params for `question` on `session_id`.
boost::json::value elicitation_params(const std::string& session_id, const engine::UserQuestion& question);

/// The client's answer as the engine knows it; anything but accept with an answer, decline or
/// cancel is read as a dismissal (fail-closed: no answer the user did not give). With `choices`, an
/// answer that is not one of them is a failure (the client did not keep to the form).
engine::UserAnswer read_elicitation_answer(const boost::json::value& result, const std::vector<std::string>& choices = {});

/// Asks over the connection; cancelling the awaiting operation withdraws the request.
boost::asio::awaitable<engine::UserAnswer> ask_user(HandlerContext& ctx, std::string session_id,
                                                     engine::UserQuestion question);

} // namespace acp::handlers
