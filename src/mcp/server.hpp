// One MCP server of a session, spoken to over stdio (MCP "stdio" transport: newline-delimited
// JSON-RPC 2.0): started in the session's cwd in a process group of its own, initialised (the
// protocol version negotiated), its tools listed; tools/call with cancellation
// (notifications/cancelled). A server that dies or answers badly fails its calls in flight with a
// clear error naming it and the tail of its stderr, and its tools are gone. stop() ends it (stdin
// closed, then SIGTERM, then SIGKILL to its group) and waits for every task of it: nothing it
// started outlives its session. Everything runs on one executor (the connection's).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace acp::mcp {

/// The protocol versions this client speaks, newest first; the first is offered.
inline constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

struct ServerSpec {
  std::string name;
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  std::vector<std::string> hidden_env;  ///< our variables it must not see (the provider's key)
  std::chrono::milliseconds start_timeout{30000};  ///< started, initialised and its tools listed
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
  long pid() const;  ///< its process (and process group)

  /// Calls a tool. Cancelling the awaiting operation sends notifications/cancelled and throws
  /// CallCancelled. Throws ServerFailure when the server fails.
  boost::asio::awaitable<CallResult> call_tool(std::string tool, boost::json::object arguments);

  /// Ends the server and waits for its tasks.
  boost::asio::awaitable<void> stop();

  struct State;

private:
  explicit Server(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// A tool result's `content` as text (what the model reads): text blocks and embedded text
/// resources as they are, other resources, resource links, images and audio as placeholders.
CallResult result_text(const boost::json::object& result);

} // namespace acp::mcp
