#include "handlers/handlers.hpp"
#include "handlers/mcp_servers.hpp"
#include "handlers/session_modes.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/slash_commands.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::NewSessionResponse> session_new(HandlerContext& ctx, protocol::NewSessionRequest req) {
  require_provider_key(ctx);
  std::vector<mcp::ServerSpec> servers;
  if (req.mcpServers) servers = mcp_server_specs(*req.mcpServers, req.cwd, ctx.config);
  std::vector<std::string> directories = req.additionalDirectories.value_or(std::vector<std::string>{});
  auto session = co_await ctx.engine.create_session(req.cwd, directories);
  // The answer waits for them: the first prompt already has their tools.
  co_await use_mcp_servers(ctx, session, servers);
  advertise_commands_after(ctx, *session);
  co_return protocol::NewSessionResponse{session->id, session_modes(*session), session_config_options(ctx, *session),
                                        std::nullopt};
}

} // namespace acp::handlers
