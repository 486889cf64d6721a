#include "handlers/handlers.hpp"

namespace acp::handlers {

boost::asio::awaitable<void> session_cancel(HandlerContext& ctx, protocol::CancelNotification note) {
  ctx.engine.cancel(note.sessionId);
  co_return;
}

// session/cancel sent as a request is performed the same way and answered {}
// (docs/decisions.md#errors-on-the-wire); as for every session method, a session not open on this
// connection is -32002 (the notification form has no answer to give).
boost::asio::awaitable<protocol::EmptyResponse> session_cancel_request(HandlerContext& ctx, protocol::CancelNotification note) {
  ctx.engine.require(note.sessionId);
  ctx.engine.cancel(note.sessionId);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
