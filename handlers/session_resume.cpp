#include "handlers/handlers.hpp"
#include "handlers/mcp_servers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/slash_commands.hpp"
#include "support/log.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::LoadSessionResponse> session_resume(HandlerContext& ctx,
                                                                     protocol::ResumeSessionRequest req) {
  std::optional<std::vector<mcp::ServerSpec>> servers;
  if (req.mcpServers) servers = mcp_server_specs(*req.mcpServers, req.cwd);
  store::SessionHeader header = co_await ctx.engine.find_stored(req.sessionId, req.cwd);
  std::pair<std::string, std::string> logged;
  if (!ctx.engine.find(req.sessionId) && ctx.engine.offers_models()) {
    // No replay, but the model choice is restored from the log's latest request/header. A log the
    // scan cannot finish still resumes, with the configured model.
    try {
      logged = co_await ctx.engine.read_log(req.sessionId, nullptr);
    } catch (const std::exception& e) {
      log::warn("session/resume " + req.sessionId + ": model not restored: " + e.what());
    }
  }
  auto session = ctx.engine.attach(header, req.additionalDirectories, logged.first, logged.second);
  // A session already attached trades its servers for these (absent: it keeps its own).
  if (servers) co_await use_mcp_servers(ctx, session, *servers);
  advertise_commands(ctx, session->id);
  co_return protocol::LoadSessionResponse{model_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
