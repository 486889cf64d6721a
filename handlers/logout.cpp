#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "handlers/provider_auth.hpp"

namespace acp::handlers {

// Sign out (auth.logout): the key in use is forgotten and the one --setup stored is removed, so
// sessions answer -32000 until authenticate finds a key again. Running turns keep the provider
// they started with.
boost::asio::awaitable<protocol::EmptyResponse> logout(HandlerContext& ctx, protocol::LogoutRequest) {
  if (ctx.auth) {
    auto forget = [&ctx] {
      ctx.auth->logout();
      return true;
    };
    co_await run_blocking(ctx, forget);
  }
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
