#include "handlers/handlers.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::InitializeResponse> initialize(HandlerContext&, protocol::InitializeRequest) {
  protocol::InitializeResponse r;
  // Our only version; the client decides whether it can speak it (contracts.md §2).
  r.protocolVersion = protocol::kProtocolVersion;
  r.agentCapabilities.loadSession = true;
  auto& sessions = r.agentCapabilities.sessionCapabilities;
  sessions.list = boost::json::object{};
  sessions.resume = boost::json::object{};
  sessions.close = boost::json::object{};
  sessions.delete_ = boost::json::object{};
  r.agentCapabilities.promptCapabilities.embeddedContext = true;
  r.agentInfo = protocol::Implementation{"dsh-acp", "dsh-acp (DeepSeek agent with cross-session references)",
                                         DSH_ACP_VERSION};
  co_return r;
}

} // namespace acp::handlers
