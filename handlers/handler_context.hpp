// What a handler may touch: the session engine (sessions, turns, store, references, provider), the
// configuration, and the channel to the client (the outbox, requests of ours). Handlers translate
// wire structs to engine calls and back; they never see JSON-RPC ids or file descriptors. Used on
// the connection's executor only.
#pragma once

#include "engine/engine.hpp"
#include "handlers/client_channel.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

namespace acp::handlers {

class ProviderAuth;

struct HandlerContext {
  engine::Engine& engine;
  const support::Config& config;
  boost::asio::any_io_executor executor;
  /// Where notifications, replayed frames and requests of ours to the client go.
  ClientChannel& channel;
  /// Whether the provider has the key it needs (set by the host; null = no key ever needed).
  ProviderAuth* auth = nullptr;
  /// What the client said it can do (initialize's clientCapabilities): fs and terminal for tools.
  boost::json::object client_capabilities = {};
};

} // namespace acp::handlers
