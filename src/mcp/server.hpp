// One MCP server of a session, spoken to as a JSON-RPC client over one of MCP's transports: stdio
// (stdio.cpp: a process started in the session's cwd in a process group of its own, newline-delimited
// JSON-RPC on its stdin and stdout), streamable HTTP or the legacy HTTP+SSE transport (http.cpp).
// Whatever the transport, it is initialised (the protocol version negotiated), its tools listed (at
// most kMaxTools of them, from a bounded number of pages and bytes), and called with cancellation
// and a time limit (notifications/cancelled). What it logs (notifications/message, stray output)
// is cut per line and capped in total. A server that dies or answers badly fails its calls in
// flight with a clear error naming it (and the tail of its stderr when it has one), and its tools
// are gone. stop() ends it (stdio: stdin closed, then SIGTERM, then SIGKILL to its group; HTTP: its
// requests abandoned, its session deleted) and waits for every task of it: nothing it started
// outlives its session. Everything runs on one executor (the connection's).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace acp::mcp {

/// The protocol versions this client speaks, newest first; the first is offered.
inline constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

/// Tools kept of one server: DeepSeek's and OpenAI's chat APIs take at most 128 functions in a
/// request, so a server's 129th tool could never be offered. Listing stops once it is reached.
inline constexpr std::size_t kMaxTools = 128;
/// tools/list pages read, and bytes of its answers read, before listing stops (a server that pages
/// forever, or pages of tools without names, cannot hold up the session's start).
inline constexpr std::size_t kMaxToolPages = 100;
inline constexpr std::size_t kMaxListingBytes = 16u << 20;
/// One logged line of a server (a notifications/message, a stray stdout line) is cut to this.
inline constexpr std::size_t kMaxLogLineBytes = 4096;
/// What one server may write into our log while it runs; after it, one line says the rest is dropped.
inline constexpr std::size_t kMaxLogBytes = 1u << 20;

enum class Transport { stdio, http, sse };

struct ServerSpec {
  std::string name;
  Transport transport = Transport::stdio;
  std::string url;  ///< http, sse: the MCP endpoint (http) or the event stream's (sse)
  std::vector<std::pair<std::string, std::string>> headers;  ///< http, sse: sent with every request
  std::string command;  ///< stdio
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  std::vector<std::string> hidden_env;  ///< our variables it must not see (the provider's key)
  std::chrono::milliseconds start_timeout{30000};  ///< started, initialised and its tools listed
  std::chrono::milliseconds call_timeout{300000};  ///< one tools/call, then it is cancelled (--mcp-call-timeout-ms)
};

struct Tool {
  std::string name;
  std::string description;
  std::string input_schema;  ///< JSON text
};

struct CallResult {
  std::string text;  ///< text and resources as text; images and audio as placeholders
  bool is_error = false;
};

/// The server cannot be used: it failed to start, died, or broke the protocol. The message names
/// the server and ends with the tail of its stderr when it wrote any.
class ServerFailure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The call was withdrawn because the awaiting operation was cancelled (the server was sent
/// notifications/cancelled and stays usable).
class CallCancelled : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Server {
public:
  /// Starts the server and lists its tools. Throws ServerFailure.
  static boost::asio::awaitable<std::unique_ptr<Server>> start(boost::asio::any_io_executor executor, ServerSpec spec);
  ~Server();  ///< kills the group if stop() was not awaited (its tasks then end on their own)

  const std::string& name() const;
  const std::string& protocol_version() const;
  const std::vector<Tool>& tools() const;
  bool running() const;
  std::string stderr_tail() const;
  long pid() const;  ///< its process (and process group); 0 for HTTP servers

  /// Calls a tool. Cancelling the awaiting operation sends notifications/cancelled and throws
  /// CallCancelled. Throws ServerFailure when the server fails. A call not answered within the
  /// spec's call_timeout is cancelled the same way and returns an error result naming the server.
  boost::asio::awaitable<CallResult> call_tool(std::string tool, boost::json::object arguments);

  /// Ends the server and waits for its tasks.
  boost::asio::awaitable<void> stop();

  struct State;

private:
  explicit Server(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// Why `url` cannot be an http or sse server's URL; empty when it can.
std::string url_problem(std::string_view url);

/// A tool result's `content` as text (what the model reads): text blocks and embedded text
/// resources as they are, other resources, resource links, images and audio as placeholders.
CallResult result_text(const boost::json::object& result);

} // namespace acp::mcp
