// The connection's side of what a handler may send to the client: session/update notifications,
// batches of frames with backpressure, requests of ours (agent -> client), and the wait for room in
// the outbox. Streams are keyed by session id, so a session's frames keep their order. The server's
// connection implements it over its outbox; tests record what is sent. Used on the connection's
// executor only (co_spawn there from other threads).
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <vector>

namespace acp::handlers {

class ClientChannel {
public:
  virtual ~ClientChannel() = default;

  /// Queues a notification on its session's stream at once (for synchronous producers such as a
  /// provider's delta sink; the connection stops reading requests while the outbox is full).
  virtual void notify(const protocol::SessionNotification& note) = 0;

  /// As notify, for a session/update frame already serialised for the session `key` (hot paths
  /// that write text chunks without JSON trees).
  virtual void notify_frame(const std::string& key, std::string frame) = 0;

  /// Queues already-serialised frames on the stream `key` (the session id), in order, once the
  /// outbox has room; the awaiting coroutine is suspended until then (backpressure without polling).
  /// false: the frames were dropped (shutdown, or the client stopped reading): stop producing.
  virtual boost::asio::awaitable<bool> send_frames(std::string key, std::vector<std::string> frames) = 0;

  /// Whether there is a client to ask (false in in-process tests): when not, call_client is never
  /// called, and what would ask the client answers as if nobody could.
  virtual bool has_client() const noexcept = 0;

  /// Sends a request to the client on the stream `key` and returns its result (fs/*, terminal/*,
  /// session/request_permission, elicitation). Throws protocol::ClientCallFailed (the client's
  /// error) or protocol::ClientCallAborted (closing, too many waiting, or the caller was cancelled,
  /// which withdraws the request).
  virtual boost::asio::awaitable<boost::json::value> call_client(std::string key, std::string method,
                                                                 boost::json::value params) = 0;

  /// Awaited by a running turn before its provider produces more: returns once the stream `key`
  /// has room in the outbox (or at once when output is being dropped, or on cancellation).
  virtual boost::asio::awaitable<void> room(const std::string& key) = 0;
};

} // namespace acp::handlers
