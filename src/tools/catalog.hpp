// The tools the model is offered: the harness's own names and parameters (its 0.1.1 tool catalog:
// read, write, edit, bash, glob, grep, todo_write), so a harness session resumed here goes on with
// the tools it used. Descriptions are ours. MCP tools join them per session (mcp__<server>__<tool>).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace acp::tools {

/// ACP's tool kinds (https://agentclientprotocol.com/protocol/tool-calls): what a card's icon says.
enum class ToolKind { read, edit, execute, search, think, other };

struct ToolSpec {
  std::string name;
  std::string description;
  boost::json::object parameters;  ///< JSON Schema of the arguments
  ToolKind kind = ToolKind::other;
  bool changes_files = false;  ///< write/edit: asked for in `ask` mode, refused in `read-only`
  bool runs_commands = false;  ///< bash: likewise
};

/// The built-in tools, in the order they are offered.
const std::vector<ToolSpec>& builtin_tools();

/// A built-in tool by name, or nullptr.
const ToolSpec* find_builtin(std::string_view name);

/// `[{type:"function", function:{name, description, parameters}}]`: the OpenAI request's `tools`.
boost::json::array request_tools(const std::vector<const ToolSpec*>& tools);

std::string_view kind_name(ToolKind kind);

} // namespace acp::tools
