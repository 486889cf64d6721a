// Requests we send to a JSON-RPC peer and wait for: to the ACP client (fs/*, terminal/*,
// session/request_permission) and to MCP servers (tools/list, tools/call). Each gets an integer id
// of ours, its frame is handed to `send`, and its caller waits, on one executor, for the peer's
// answer. Bounded (a peer that never answers cannot make the table grow); a caller cancelled while
// waiting withdraws its request with the peer's cancel notification (ACP `$/cancel_request`, MCP
// `notifications/cancelled`); close() releases every waiting caller.
#pragma once

#include "protocol/client_call.hpp"
#include "protocol/jsonrpc.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace acp::transport {

using protocol::ClientCallAborted;
using protocol::ClientCallFailed;

class OutboundCalls {
public:
  /// Queues a frame on the stream `key` (never waits).
  using Send = std::function<void(const std::string& key, std::string frame)>;
  /// The notification withdrawing request `id` (a whole frame).
  using CancelFrame = std::function<std::string(std::int64_t id)>;

  /// ACP's: `$/cancel_request {requestId}`.
  static std::string acp_cancel_frame(std::int64_t id);

  OutboundCalls(boost::asio::any_io_executor executor, Send send, CancelFrame cancel_frame = acp_cancel_frame,
                std::size_t max_pending = 256);
  ~OutboundCalls();
  OutboundCalls(const OutboundCalls&) = delete;
  OutboundCalls& operator=(const OutboundCalls&) = delete;

  /// Sends the request and returns the client's result. Throws ClientCallFailed, ClientCallAborted.
  /// Run it on the executor given above.
  boost::asio::awaitable<boost::json::value> call(std::string key, std::string method, boost::json::value params);

  /// Delivers a response frame; false when it matches no waiting call (late, unknown or not ours).
  bool complete(jsonrpc::Response&& response);

  /// Releases every waiting caller with ClientCallAborted(why); later calls fail at once.
  void close(const std::string& why);

  std::size_t waiting() const { return pending_.size(); }

private:
  struct Pending;
  boost::asio::any_io_executor executor_;
  Send send_;
  CancelFrame cancel_frame_;
  std::size_t max_pending_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending_;
  std::string closed_;  ///< why calls fail at once; "" while open
};

} // namespace acp::transport
