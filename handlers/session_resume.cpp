#include "handlers/handlers.hpp"
#include "engine/permission_log.hpp"
#include "handlers/mcp_servers.hpp"
#include "handlers/session_attach.hpp"
#include "support/log.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::LoadSessionResponse> session_resume(HandlerContext& ctx,
                                                                     protocol::ResumeSessionRequest req) {
  // Before the first suspension: a prompt sent right behind this resume waits for it (Engine::attached).
  const engine::Engine::Attaching attaching(ctx.engine, req.sessionId);
  std::optional<std::vector<mcp::ServerSpec>> servers;
  if (req.mcpServers) servers = mcp_server_specs(*req.mcpServers, req.cwd, ctx.config);
  engine::StoredSession stored = co_await ctx.engine.find_stored(req.sessionId, req.cwd);
  if (req.additionalDirectories) co_await ctx.engine.check_directories(*req.additionalDirectories);
  std::pair<std::string, std::string> logged;
  auto choices = std::make_shared<engine::LoggedChoices>();
  // A named sink, not a temporary in the co_await expression (GCC 12 lost its events).
  const engine::EventSink collect = [choices](boost::json::object&& e) { choices->observe(e); };
  if (!ctx.engine.find(req.sessionId)) {
    // No replay, but the model choice (the log's latest request/header), the "always" choices and
    // the mode are restored from a scan of the log. A log the scan cannot finish still resumes, with
    // the configured model and what was read before the damage.
    try {
      logged = co_await ctx.engine.read_log(req.sessionId, collect);
    } catch (const std::exception& e) {
      log::warn("session/resume " + req.sessionId + ": model, mode and permission rules not (fully) restored: " +
                e.what());
    }
  }
  // An already attached session keeps its state (its rules are in memory); the scan above ran for
  // a session attached here and now, unless another request attached it while the log was read.
  co_return co_await attach_stored_session(ctx, stored, req, logged, *choices, servers);
}

} // namespace acp::handlers
