#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "protocol/jsonrpc.hpp"

#include <algorithm>

namespace acp::handlers {

// The model choice takes effect at the session's next request (its request/header is written
// then), so changing it while a prompt runs does not alter that prompt.
boost::asio::awaitable<protocol::SetSessionConfigOptionResponse> session_set_config_option(
    HandlerContext& ctx, protocol::SetSessionConfigOptionRequest req) {
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!session) throw jsonrpc::resource_not_found(req.sessionId);
  if (req.configId != kModelOptionId || !offers_models(ctx.config))
    throw jsonrpc::invalid_params("/configId", "unknown config option '" + req.configId + "'");
  if ((req.type && *req.type == "boolean") || !req.value.is_string())
    throw jsonrpc::invalid_params("/value", "the model option takes a value id (string)");
  std::string value(req.value.get_string());
  auto choices = model_choices(ctx.config, session_model(ctx.config, *session));
  if (std::find(choices.begin(), choices.end(), value) == choices.end())
    throw jsonrpc::invalid_params("/value", "unknown model '" + value + "'");
  session->model = value;
  co_return protocol::SetSessionConfigOptionResponse{*model_config_options(ctx.config, *session), std::nullopt};
}

} // namespace acp::handlers
