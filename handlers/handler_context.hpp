// What a handler may touch: the session engine (sessions, turns, store, references, provider), the
// configuration, and the notification sink (the outbox). Handlers translate wire structs to engine
// calls and back; they never see JSON-RPC ids, frames or file descriptors. Used on the connection's
// executor only.
#pragma once

#include "engine/engine.hpp"
#include "protocol/types/updates.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <string>
#include <vector>

namespace acp::handlers {

class ProviderAuth;

struct HandlerContext {
  engine::Engine& engine;
  const support::Config& config;
  boost::asio::any_io_executor executor;
  /// Queues a notification on its session's stream at once (for synchronous producers such as a
  /// provider's delta sink; the connection stops reading requests while the outbox is full).
  std::function<void(const protocol::SessionNotification&)> notify;
  /// Queues already-serialised frames on the stream `key` (the session id), in order, once the
  /// outbox has room; the awaiting coroutine is suspended until then (backpressure without polling).
  /// false: the frames were dropped (shutdown, or the client stopped reading): stop producing.
  /// The awaitable runs on the connection's executor (co_spawn it there from other threads).
  std::function<boost::asio::awaitable<bool>(std::string key, std::vector<std::string> frames)> send_frames;
  /// Whether the provider has the key it needs (set by the host; null = no key ever needed).
  ProviderAuth* auth = nullptr;
  /// As notify, for a session/update frame already serialised for the session `key` (hot paths
  /// that write text chunks without JSON trees); null = serialise and use notify instead.
  std::function<void(const std::string& key, std::string frame)> notify_frame;
  /// Sends a request to the client on the stream `key` and returns its result (fs/*, terminal/*,
  /// session/request_permission). Throws protocol::ClientCallFailed (the client's error) or
  /// protocol::ClientCallAborted (closing, too many waiting, or the caller was cancelled, which
  /// withdraws the request). Null when there is no client to ask (in-process tests).
  std::function<boost::asio::awaitable<boost::json::value>(std::string key, std::string method, boost::json::value params)>
      call_client = {};
  /// Awaited by a running turn before its provider produces more: returns once the stream `key`
  /// has room in the outbox (or at once when output is being dropped, or on cancellation). null =
  /// never wait.
  std::function<boost::asio::awaitable<void>(const std::string& key)> room = {};
  /// What the client said it can do (initialize's clientCapabilities): fs and terminal for tools.
  boost::json::object client_capabilities = {};
};

} // namespace acp::handlers
