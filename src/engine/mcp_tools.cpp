// TEMPORARY local placeholder (not committed): replaced by the MCP engineer's implementation.
#include "engine/mcp_tools.hpp"
#include "mcp/server.hpp"
namespace acp::engine {
struct McpTools::Entry {};
std::string mcp_tool_name(std::string_view server, std::string_view tool) { return "mcp__" + std::string(server) + "__" + std::string(tool); }
McpTools::McpTools() = default;
McpTools::~McpTools() = default;
boost::asio::awaitable<void> McpTools::start(boost::asio::any_io_executor, std::vector<mcp::ServerSpec>) { co_return; }
std::vector<llm::ToolDefinition> McpTools::definitions() const { return {}; }
bool McpTools::offers(std::string_view) const { return false; }
boost::asio::awaitable<ToolOutcome> McpTools::call(std::string, std::string) { co_return ToolOutcome{}; }
boost::asio::awaitable<void> McpTools::stop() { co_return; }
std::size_t McpTools::servers() const { return 0; }
}
