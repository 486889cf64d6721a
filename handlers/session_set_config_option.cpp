#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

// The model choice takes effect at the session's next request (its request/header is written
// then), so changing it while a prompt runs does not alter that prompt.
boost::asio::awaitable<protocol::SetSessionConfigOptionResponse> session_set_config_option(
    HandlerContext& ctx, protocol::SetSessionConfigOptionRequest req) {
  auto session = ctx.engine.require(req.sessionId);
  if (req.configId != kModelOptionId || !ctx.engine.offers_models())
    throw jsonrpc::invalid_params("/configId", "unknown config option '" + req.configId + "'");
  if ((req.type && *req.type == "boolean") || !req.value.is_string())
    throw jsonrpc::invalid_params("/value", "the model option takes a value id (string)");
  ctx.engine.set_model(*session, std::string(req.value.get_string()));
  co_return protocol::SetSessionConfigOptionResponse{*model_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
