#include "handlers/handlers.hpp"
#include "handlers/session_modes.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

// Takes effect at the next tool call, also inside a running prompt: permission is decided per call.
// The choice is logged (engine::Engine::log_mode), so load and resume in another process restore it.
boost::asio::awaitable<protocol::EmptyResponse> session_set_mode(HandlerContext& ctx, protocol::SetSessionModeRequest req) {
  auto attaching = ctx.engine.attached(req.sessionId);  // behind a load or resume under way
  const std::shared_ptr<engine::Session> session = co_await std::move(attaching);
  auto mode = engine::parse_mode(req.modeId);
  if (!mode) throw jsonrpc::invalid_params("/modeId", "unknown mode '" + req.modeId + "' (ask, read-only or auto)");
  switch_mode(ctx, *session, *mode, true);
  // Logged before the answer (a client may start another process right after it), unless a prompt
  // runs: it logs the mode when it is over, and the answer does not wait for it.
  co_await ctx.engine.log_mode(session);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
