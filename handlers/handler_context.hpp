// What a handler may touch: the session engine (sessions, turns, store, references, provider), the
// configuration, and the notification sink (the outbox). Handlers translate wire structs to engine
// calls and back; they never see JSON-RPC ids, frames or file descriptors. Used on the connection's
// executor only.
#pragma once

#include "engine/engine.hpp"
#include "protocol/types/updates.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string>
#include <vector>

namespace acp::handlers {

class ProviderAuth;

struct HandlerContext {
  engine::Engine& engine;
  const support::Config& config;
  boost::asio::any_io_executor executor;
  std::function<void(const protocol::SessionNotification&)> notify;
  /// Queues already-serialised frames, in order (callable from any thread; they are posted to the
  /// connection). `queued_bytes` reports what the outbox still holds, for backpressure.
  std::function<void(std::vector<std::string>)> send_frames;
  std::function<std::size_t()> queued_bytes;
  /// Whether the provider has the key it needs (set by the host; null = no key ever needed).
  ProviderAuth* auth = nullptr;
};

} // namespace acp::handlers
