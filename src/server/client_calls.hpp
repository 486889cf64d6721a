// Requests from the agent to the client (fs/*, terminal/*, session/request_permission): each gets
// an integer id of ours, is queued on its session's stream, and its caller waits, on the
// connection's executor, for the client's answer. Bounded (a client that never answers cannot make
// the table grow); a caller cancelled while waiting (the turn's cancellation) withdraws its request
// with `$/cancel_request`; when the connection closes every waiting caller is released.
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

namespace acp::server {

using protocol::ClientCallAborted;
using protocol::ClientCallFailed;

class ClientCalls {
public:
  /// Queues a frame on the stream `key` (never waits).
  using Send = std::function<void(const std::string& key, std::string frame)>;

  ClientCalls(boost::asio::any_io_executor executor, Send send, std::size_t max_pending = 256);
  ~ClientCalls();
  ClientCalls(const ClientCalls&) = delete;
  ClientCalls& operator=(const ClientCalls&) = delete;

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
  std::size_t max_pending_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending_;
  std::string closed_;  ///< why calls fail at once; "" while open
};

} // namespace acp::server
