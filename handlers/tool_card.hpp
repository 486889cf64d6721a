// Tool calls of the harness's own tools as an editor expects them (https://agentclientprotocol.com/protocol/tool-calls). The
// tool catalog of harness 0.1.1 (the same names in 45fc) gets an honest ACP kind, a readable title
// and, for the file tools, the file as the card's location: read/read_image → read, write/edit →
// edit, bash → execute, glob/grep → search; any other tool is an `other` card titled with its name.
// A write or edit that succeeded shows its change as a diff; a command says how it ended. Pure:
// relative paths are joined to the session's cwd, never looked up.
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::handlers {

/// A call's arguments: the model's JSON string parsed; a string that is not JSON stays that string;
/// none (nullptr) is null.
boost::json::value parse_arguments(const boost::json::value* arguments);

/// The card (in progress) of a call of `name` with parsed `arguments`; `rawInput` takes them
/// unless they are null. A write or edit's card shows the change its arguments ask for
/// (argument_diff) as its content.
protocol::ToolCall tool_call_card(std::string id, std::string_view name, boost::json::value arguments,
                                  std::string_view cwd);

/// Whether `name` is a tool that changes a file (write, edit): its success may show a diff.
bool changes_file(std::string_view name);

/// The change a write or edit asks for, from its arguments (edit: old_string → new_string; write: a
/// file with `content`, no old text); nullopt for other tools and arguments without a file path.
std::optional<protocol::ToolDiff> argument_diff(std::string_view name, const boost::json::value& arguments,
                                                std::string_view cwd);

/// The applied hunks a write/edit result records in `meta.diffs` ([{path, oldText|null, newText}],
/// with context lines: better than the arguments); empty when it records none.
std::vector<protocol::ToolDiff> result_diffs(const boost::json::object& result_data, std::string_view cwd);

/// How a command ended, as its result records it (tool/result meta {exitStatus:{exitCode, signal},
/// timedOutMs?}, ACP's terminal exit status).
struct CommandEnd {
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> signal;
  std::optional<std::int64_t> timed_out_ms;
};

/// The end a result records; nullopt when it records none (or not in that shape).
std::optional<CommandEnd> result_command_end(const boost::json::object& result_data);

/// Whether the end is a failure: a non-zero exit, a signal or a timeout.
bool failed_end(const CommandEnd& end);

/// One line for the card: `Exited with code 3.`, `Killed by signal SIGTERM.`, `Timed out after 5 s:
/// the command was killed.`, or `Cancelled: the command was killed.` (`cancelled`); "" when unknown.
std::string command_end_text(const CommandEnd& end, bool cancelled);

/// {exitCode, signal[, timedOutMs]}: the card's `_meta["dsh-acp/exitStatus"]`.
boost::json::object command_end_json(const CommandEnd& end);

} // namespace acp::handlers
