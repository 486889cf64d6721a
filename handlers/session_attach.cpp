#include "handlers/session_attach.hpp"

#include "handlers/mcp_servers.hpp"
#include "handlers/session_modes.hpp"
#include "handlers/slash_commands.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::LoadSessionResponse> attach_stored_session(
    HandlerContext& ctx, const engine::StoredSession& stored, const protocol::LoadSessionRequest& req,
    const std::pair<std::string, std::string>& logged, engine::LoggedChoices& choices,
    std::optional<std::vector<mcp::ServerSpec>>& servers) {
  // Asked after the log was read: another request may have attached the session meanwhile, and
  // then its rules in memory are newer than the log's.
  const bool attached = ctx.engine.find(req.sessionId) != nullptr;
  auto session = ctx.engine.attach(stored, req.additionalDirectories, logged.first, logged.second);
  if (!attached) {
    session->permissions = std::move(choices.permissions);
    if (choices.mode) session->mode = *choices.mode;
  }
  // A session already attached trades its servers for these (absent: it keeps its own).
  if (servers) co_await use_mcp_servers(ctx, session, *servers);
  advertise_commands_now(ctx, *session);
  co_return protocol::LoadSessionResponse{session_modes(*session), session_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
