#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::EmptyResponse> session_close(HandlerContext& ctx, protocol::SessionIdRequest req) {
  if (!ctx.sessions.find(req.sessionId)) throw jsonrpc::resource_not_found(req.sessionId);
  // Cancels a running prompt like session/cancel; the prompt still answers "cancelled".
  ctx.sessions.remove(req.sessionId);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
