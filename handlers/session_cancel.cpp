#include "handlers/handlers.hpp"
#include "support/log.hpp"

namespace acp::handlers {

boost::asio::awaitable<void> session_cancel(HandlerContext& ctx, protocol::CancelNotification note) {
  SessionState* session = ctx.sessions.find(note.sessionId);
  if (!session || !session->turn) {
    log::debug("session/cancel for " + note.sessionId + ": nothing running");
    co_return;
  }
  // The flag covers the race where the provider has not yet installed its cancellation handler.
  session->turn->cancel();
  co_return;
}

} // namespace acp::handlers
