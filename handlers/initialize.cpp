#include "handlers/client_capabilities.hpp"
#include "handlers/handlers.hpp"
#include "handlers/provider_auth.hpp"
#include "support/build_info.hpp"
#include "support/sandbox.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::InitializeResponse> initialize(HandlerContext& ctx, protocol::InitializeRequest req) {
  // Tools go through the editor where it says it can (fs, terminal); a second initialize replaces it.
  ctx.client_capabilities = req.clientCapabilities.value_or(boost::json::object{});
  protocol::InitializeResponse r;
  // Our only version; the client decides whether it can speak it (https://agentclientprotocol.com/protocol/initialization).
  r.protocolVersion = protocol::kProtocolVersion;
  r.agentCapabilities.loadSession = true;
  auto& sessions = r.agentCapabilities.sessionCapabilities;
  sessions.list = boost::json::object{};
  sessions.resume = boost::json::object{};
  sessions.close = boost::json::object{};
  sessions.delete_ = boost::json::object{};
  sessions.additionalDirectories = boost::json::object{};
  sessions.fork = boost::json::object{};
  // How commands the server runs itself are confined (docs/tools.md): "landlock", or "none" with why.
  boost::json::object sandbox{{"commands", support::sandbox_name()}};
  if (!support::sandbox_missing_reason().empty()) sandbox["reason"] = support::sandbox_missing_reason();
  r.agentCapabilities._meta = boost::json::object{{"dsh-acp/sessionReferences", {{"version", 1}}},
                                                  {"dsh-acp/sandbox", std::move(sandbox)}};
  r.agentCapabilities.promptCapabilities.embeddedContext = true;
  // MCP servers over streamable HTTP and the legacy HTTP+SSE transport besides stdio (src/mcp/http.cpp).
  r.agentCapabilities.mcpCapabilities.http = true;
  r.agentCapabilities.mcpCapabilities.sse = true;
  // Whatever the provider: the model is chosen per session, and a prompt with an image for a model
  // that takes none is refused naming it (docs/models.md), which tells the user more than a client that
  // never offers to attach one.
  r.agentCapabilities.promptCapabilities.image = true;
  if (ctx.auth) r.agentCapabilities.auth = protocol::AgentAuthCapabilities{boost::json::object{}};
  // Always at least the agent method (with a key, without, or none needed); the terminal one only
  // to a client that runs it (clientCapabilities.auth.terminal).
  if (ctx.auth) {
    r.authMethods = ctx.auth->methods(client_flag(ctx.client_capabilities, "auth", "terminal"));
  }
  r.agentInfo = protocol::Implementation{"dsh-acp", "dsh-acp (DeepSeek agent with cross-session references)",
                                         support::build_version};
  co_return r;
}

} // namespace acp::handlers
