#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "handlers/provider_auth.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

// The editor calls this after the user followed the method's description (set the key in the
// agent's environment, the config file or the key file --setup writes). Succeeds only if a key is
// now available (at once for a provider that needs none).
boost::asio::awaitable<protocol::EmptyResponse> authenticate(HandlerContext& ctx, protocol::AuthenticateRequest req) {
  // The terminal method is the client's to run, never ours to be asked (the schema's rule).
  if (req.methodId != ProviderAuth::kMethodId || !ctx.auth)
    throw jsonrpc::invalid_params("/methodId", "unknown authentication method '" + req.methodId + "'");
  if (!ctx.auth->key_required()) co_return protocol::EmptyResponse{};
  // Reads the config file: off the connection thread.
  auto refresh = [&ctx] { return ctx.auth->refresh(); };
  bool ready = *co_await run_blocking(ctx, refresh);
  if (!ready) throw jsonrpc::auth_required(ctx.auth->provider());
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
