// A session's MCP servers (the client's `mcpServers` of session/new, load and resume) as tools the
// model is offered: each server's tools as `mcp__<server>__<tool>` with their schemas. Servers are
// started in the session's cwd when the session is set up (concurrently; one that fails is logged
// with its stderr tail and left out, the session works without it), called with the call's
// cancellation, and stopped with the session (close, delete, shutdown). A server that dies later
// withdraws its tools; a call in flight then gets an error result. What is offered is bounded: at
// most mcp::kMaxTools per server, max_session_mcp_tools() and kMaxToolBytes for the whole set. Lives on the connection thread.
#pragma once

#include "engine/tool_runner.hpp"
#include "llm/provider.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace acp::support {
class Event;
}
namespace acp::mcp {
class Server;
struct ServerSpec;
}

namespace acp::engine {

/// Bytes of the MCP tools' names, descriptions and schemas offered in one session: every model
/// request carries them. A tool that would pass it is left out (logged once per server).
inline constexpr std::size_t kMaxToolBytes = 256u << 10;
/// Functions one model request may carry: DeepSeek's and OpenAI's chat APIs take at most 128. The
/// session's MCP tools, all servers together, get what the built-in tools leave of it; the rest
/// are left out (logged once per server), so no request is refused for its tool count.
inline constexpr std::size_t kMaxRequestTools = 128;
/// The server's tools offered only in some turns: ask_user (a client that shows forms) and recall
/// (other sessions exist).
inline constexpr std::size_t kConditionalServerTools = 2;
/// MCP tools offered in one session: kMaxRequestTools less the built-in and the conditional tools.
std::size_t max_session_mcp_tools();

/// `mcp__<server>__<tool>` (the name offered to the model), made a valid OpenAI function name:
/// characters outside [A-Za-z0-9_-] become `_`, cut to 64 bytes.
std::string mcp_tool_name(std::string_view server, std::string_view tool);

/// The provider keys a tool's process must not inherit (DEEPSEEK_API_KEY, OPENAI_API_KEY).
std::vector<std::string> provider_key_env();

/// Owned by a shared_ptr (its calls and starts keep it alive).
class McpTools : public std::enable_shared_from_this<McpTools> {
public:
  McpTools();
  ~McpTools();
  McpTools(const McpTools&) = delete;
  McpTools& operator=(const McpTools&) = delete;

  /// Starts `servers` (each in its spec's cwd) concurrently and lists their tools; failures are
  /// logged and leave that server out. Returns once every server started or failed.
  boost::asio::awaitable<void> start(boost::asio::any_io_executor executor, std::vector<mcp::ServerSpec> servers);

  /// The tools of the running servers, in server order then the server's own order.
  std::vector<llm::ToolDefinition> definitions() const;
  /// Whether `name` is a tool of a running server.
  bool offers(std::string_view name) const;
  /// Calls `name` (an mcp__ name) with the model's raw JSON `arguments`. Bad JSON, arguments that
  /// are not an object, an unknown tool or a failed server are error outcomes; cancelling the
  /// awaiting operation cancels the call (notifications/cancelled) and returns `cancelled`.
  boost::asio::awaitable<ToolOutcome> call(std::string name, std::string arguments);

  /// Gives up the starts still running (shutdown: a server slow to start must not hold it up);
  /// start() then returns soon, those servers left out.
  void abandon_start();

  /// Stops every server and waits for them (idempotent).
  boost::asio::awaitable<void> stop();

  /// Servers running now.
  std::size_t servers() const;
  /// The process ids of the servers running now (tests look for them).
  std::vector<long> pids() const;

private:
  struct Entry;
  struct Offered {
    std::size_t entry;
    std::string tool;  ///< the server's own name of it
  };
  void add_tools(std::size_t entry);
  std::string withdrawn_tools(std::size_t entry) const;

  std::vector<std::unique_ptr<Entry>> entries_;
  std::map<std::string, Offered, std::less<>> offered_;  ///< mcp__ name -> its server and tool
  std::vector<std::string> order_;                       ///< mcp__ names in definition order
  std::size_t offered_bytes_ = 0;                         ///< of every tool offered (kMaxToolBytes)
  std::size_t starting_ = 0;                              ///< servers whose start has not finished
  std::unique_ptr<support::Event> started_;               ///< notified as each start finishes
  bool stopping_ = false;
};

} // namespace acp::engine
