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
  auto attaching = ctx.engine.attached(req.sessionId);  // behind a load or resume under way
  const std::shared_ptr<engine::Session> session = co_await std::move(attaching);
  // Sharing is the store's: done before the answer. Someone else's session refuses it (-32602).
  if (req.configId == kSharedOptionId && session->ownership.can_share) {
    const bool boolean = req.type && *req.type == "boolean";
    bool shared = false;
    if (boolean && req.value.is_bool())
      shared = req.value.get_bool();
    else if (!boolean && req.value.is_string() && (req.value.get_string() == "on" || req.value.get_string() == "off"))
      shared = req.value.get_string() == "on";
    else
      throw jsonrpc::invalid_params("/value", "the shared option takes \"on\" or \"off\" (or true/false with type \"boolean\")");
    if (auto refused = co_await ctx.engine.set_shared(req.sessionId, shared))
      throw jsonrpc::invalid_params("/configId", *refused);
    co_return protocol::SetSessionConfigOptionResponse{session_config_options(ctx, *session), std::nullopt};
  }
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
    co_await ctx.engine.log_mode(session);
  }
  co_return protocol::SetSessionConfigOptionResponse{session_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
