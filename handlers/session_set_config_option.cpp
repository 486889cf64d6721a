#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/session_modes.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

// The model choice takes effect at the session's next request (its request/header is written
// then), so changing it while a prompt runs does not alter that prompt. The mode takes effect at
// the next tool call.
boost::asio::awaitable<protocol::SetSessionConfigOptionResponse> session_set_config_option(
    HandlerContext& ctx, protocol::SetSessionConfigOptionRequest req) {
  auto session = ctx.engine.require(req.sessionId);
  const bool model = req.configId == kModelOptionId && ctx.engine.offers_models();
  if (!model && req.configId != kModeOptionId)
    throw jsonrpc::invalid_params("/configId", "unknown config option '" + req.configId + "'");
  if ((req.type && *req.type == "boolean") || !req.value.is_string())
    throw jsonrpc::invalid_params("/value", std::string("the ") + (model ? "model" : "mode") +
                                                " option takes a value id (string)");
  if (model) {
    ctx.engine.set_model(*session, std::string(req.value.get_string()));
  } else {
    auto mode = engine::parse_mode(req.value.get_string());
    if (!mode)
      throw jsonrpc::invalid_params("/value", "unknown mode '" + std::string(req.value.get_string()) +
                                                  "' (ask, read-only or auto)");
    switch_mode(ctx, *session, *mode, false);
  }
  co_return protocol::SetSessionConfigOptionResponse{session_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
