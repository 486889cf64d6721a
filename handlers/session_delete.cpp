#include "handlers/handlers.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::EmptyResponse> session_delete(HandlerContext& ctx, protocol::SessionIdRequest req) {
  co_await ctx.engine.remove(req.sessionId);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
