// What a Server is made of, whatever carries its messages: the JSON-RPC calls waiting for it, what it
// said (its tools, protocol version), why it failed, and the bounded log of what it wrote. A
// transport (stdio.cpp, http.cpp) derives from it: it sends frames, hands every frame it received to
// on_frame(), and stops. Internal to acp_mcp.
#pragma once

#include "mcp/server.hpp"
#include "support/log.hpp"
#include "transport/outbound_calls.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace acp::mcp {

/// One message of a server, and (stdio) one line: bigger ones break the server; (HTTP) one answer,
/// a streamed one included: bigger ones fail the request.
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;
/// Requests waiting for a server's answer (and, for HTTP, requests in flight).
inline constexpr std::size_t kMaxWaiting = 256;

struct Server::State : std::enable_shared_from_this<State> {
  State(boost::asio::any_io_executor executor, ServerSpec spec);
  virtual ~State() = default;

  boost::asio::any_io_executor executor;
  ServerSpec spec;
  transport::OutboundCalls calls;
  std::vector<Tool> tools;
  std::string version;
  std::string stderr_tail;  ///< stdio: the end of its stderr
  bool running = true;
  std::string failure;         ///< why it is not running, once it is not
  std::uint64_t bytes_read = 0;  ///< of its messages so far (bounds what its tools/list answers may cost)
  std::size_t ignored_frames = 0;
  std::size_t logged_bytes = 0;  ///< what it has put into our log
  bool log_dropped = false;      ///< kMaxLogBytes reached: nothing more of it is logged

  /// "MCP server "x" <what>", with the tail of its stderr when it wrote any.
  std::string describe(const std::string& what) const;
  /// A line the server caused in our log, bounded (kMaxLogLineBytes, kMaxLogBytes).
  void log_line(log::Level level, std::string_view what);
  /// A message from the server: a response completes its call, a ping is answered, a log message
  /// logged. Text that is not a JSON-RPC message is logged (a few times), not fatal. Returns the id
  /// of the response it was, if it was one.
  std::optional<std::int64_t> on_frame(std::string text);
  /// The server is unusable: its calls fail with `why`, its tools are withdrawn, the transport ends it.
  void fail(const std::string& why);

  /// Sends a whole frame (never waits).
  virtual void send(std::string frame) = 0;
  /// The transport's part of fail().
  virtual void on_failed() = 0;
  /// A call was withdrawn (cancelled or timed out) before its answer: HTTP abandons its request.
  virtual void withdrawn(std::int64_t /*id*/) {}
  /// Before initialize: the legacy SSE transport waits for the server's endpoint.
  virtual boost::asio::awaitable<void> open();
  /// Ends the server and waits for everything of it (idempotent).
  virtual boost::asio::awaitable<void> stop() = 0;
  /// Ends it without waiting (the Server was destroyed without stop()).
  virtual void abandon() = 0;
  virtual long pid() const { return 0; }
};

/// A stdio server's process started, its state ready for initialize. Throws ServerFailure.
std::shared_ptr<Server::State> start_stdio(boost::asio::any_io_executor executor, ServerSpec spec);
/// An http or sse server's state, not yet connected. Throws ServerFailure on a bad URL.
std::shared_ptr<Server::State> make_http(boost::asio::any_io_executor executor, ServerSpec spec);

} // namespace acp::mcp
