#include "handlers/handlers.hpp"

namespace acp::handlers {

// A running prompt is cancelled and answered "cancelled" before this answer.
boost::asio::awaitable<protocol::EmptyResponse> session_close(HandlerContext& ctx, protocol::SessionIdRequest req) {
  co_await ctx.engine.close(req.sessionId);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
