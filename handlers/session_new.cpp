#include "handlers/handlers.hpp"
#include "handlers/session_modes.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/slash_commands.hpp"
#include "support/log.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::NewSessionResponse> session_new(HandlerContext& ctx, protocol::NewSessionRequest req) {
  require_provider_key(ctx);
  if (req.mcpServers && !req.mcpServers->empty())
    log::info("ignoring " + std::to_string(req.mcpServers->size()) + " MCP server(s): dsh-acp offers the model no tools");
  std::vector<std::string> directories = req.additionalDirectories.value_or(std::vector<std::string>{});
  auto session = co_await ctx.engine.create_session(req.cwd, directories);
  advertise_commands(ctx, session->id);
  co_return protocol::NewSessionResponse{session->id, session_modes(*session), session_config_options(ctx, *session),
                                        std::nullopt};
}

} // namespace acp::handlers
