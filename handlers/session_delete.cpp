#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "store/errors.hpp"
#include "store/session_store.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::EmptyResponse> session_delete(HandlerContext& ctx, protocol::SessionIdRequest req) {
  bool attached = ctx.sessions.find(req.sessionId) != nullptr;
  ctx.sessions.remove(req.sessionId);
  auto remove = [&ctx, id = req.sessionId] {
    try {
      ctx.store().delete_session(id);
      return true;
    } catch (const store::SessionNotFound&) {
      return false;
    }
  };
  bool deleted = *co_await run_blocking(ctx, remove);
  // A session created here but never prompted has no log yet (logs are written lazily).
  if (!deleted && !attached) throw jsonrpc::resource_not_found(req.sessionId);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
