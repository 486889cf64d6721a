#include "handlers/handlers.hpp"
#include "handlers/session_lookup.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::EmptyResponse> session_resume(HandlerContext& ctx, protocol::ResumeSessionRequest req) {
  store::SessionHeader header = co_await find_stored_session(ctx, req.sessionId, req.cwd);
  attach_session(ctx, header, req.additionalDirectories);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
