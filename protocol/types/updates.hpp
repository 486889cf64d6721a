// session/update notifications, keyed by "sessionUpdate" (https://agentclientprotocol.com/protocol/prompt-turn).
#pragma once

#include "protocol/types/content.hpp"
#include "protocol/types/session.hpp"

#include <boost/describe/enum.hpp>

namespace acp::protocol {

struct UserMessageChunk {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "user_message_chunk";
  ContentBlock content;
  std::optional<std::string> messageId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(UserMessageChunk, (), (content, messageId, _meta))

struct AgentMessageChunk {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "agent_message_chunk";
  ContentBlock content;
  std::optional<std::string> messageId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AgentMessageChunk, (), (content, messageId, _meta))

struct AgentThoughtChunk {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "agent_thought_chunk";
  ContentBlock content;
  std::optional<std::string> messageId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AgentThoughtChunk, (), (content, messageId, _meta))

enum class ToolKind { read, edit, delete_, move, search, execute, think, fetch, switch_mode, other };
BOOST_DESCRIBE_ENUM(ToolKind, read, edit, delete_, move, search, execute, think, fetch, switch_mode, other)

enum class ToolCallStatus { pending, in_progress, completed, failed };
BOOST_DESCRIBE_ENUM(ToolCallStatus, pending, in_progress, completed, failed)

/// Tool output shown as a content block.
struct ToolContent {
  static constexpr std::string_view kTagKey = "type", kTag = "content";
  ContentBlock content;
};
BOOST_DESCRIBE_STRUCT(ToolContent, (), (content))

/// A file change; `path` absolute, no `oldText` for a new file.
struct ToolDiff {
  static constexpr std::string_view kTagKey = "type", kTag = "diff";
  std::string path;
  std::optional<std::string> oldText;
  std::string newText;
};
BOOST_DESCRIBE_STRUCT(ToolDiff, (), (path, oldText, newText))

/// A terminal the client created for the call (terminal/create): the client shows it live.
struct ToolTerminal {
  static constexpr std::string_view kTagKey = "type", kTag = "terminal";
  std::string terminalId;
};
BOOST_DESCRIBE_STRUCT(ToolTerminal, (), (terminalId))

using ToolCallContent = std::variant<ToolContent, ToolDiff, ToolTerminal>;

/// A file the tool reads or changes (absolute path, 1-based line).
struct ToolCallLocation {
  std::string path;
  std::optional<std::uint32_t> line;
};
BOOST_DESCRIBE_STRUCT(ToolCallLocation, (), (path, line))

struct ToolCall {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "tool_call";
  std::string toolCallId;
  std::string title;
  std::optional<ToolKind> kind;
  std::optional<ToolCallStatus> status;
  std::optional<std::vector<ToolCallContent>> content;
  std::optional<std::vector<ToolCallLocation>> locations;
  std::optional<boost::json::value> rawInput;
  std::optional<boost::json::value> rawOutput;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ToolCall, (), (toolCallId, title, kind, status, content, locations, rawInput, rawOutput, _meta))

struct ToolCallUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "tool_call_update";
  std::string toolCallId;
  std::optional<std::string> title;
  std::optional<ToolKind> kind;
  std::optional<ToolCallStatus> status;
  std::optional<std::vector<ToolCallContent>> content;
  std::optional<std::vector<ToolCallLocation>> locations;
  std::optional<boost::json::value> rawInput;
  std::optional<boost::json::value> rawOutput;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ToolCallUpdate, (), (toolCallId, title, kind, status, content, locations, rawInput, rawOutput, _meta))

enum class PlanEntryPriority { high, medium, low };
BOOST_DESCRIBE_ENUM(PlanEntryPriority, high, medium, low)
enum class PlanEntryStatus { pending, in_progress, completed };
BOOST_DESCRIBE_ENUM(PlanEntryStatus, pending, in_progress, completed)

struct PlanEntry {
  std::string content;
  PlanEntryPriority priority = PlanEntryPriority::medium;
  PlanEntryStatus status = PlanEntryStatus::pending;
};
BOOST_DESCRIBE_STRUCT(PlanEntry, (), (content, priority, status))

struct Plan {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "plan";
  std::vector<PlanEntry> entries;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(Plan, (), (entries, _meta))

struct AvailableCommandInput {
  std::string hint;
};
BOOST_DESCRIBE_STRUCT(AvailableCommandInput, (), (hint))

struct AvailableCommand {
  std::string name;
  std::string description;
  std::optional<AvailableCommandInput> input;
};
BOOST_DESCRIBE_STRUCT(AvailableCommand, (), (name, description, input))

struct AvailableCommandsUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "available_commands_update";
  std::vector<AvailableCommand> availableCommands;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AvailableCommandsUpdate, (), (availableCommands, _meta))

struct SessionInfoUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "session_info_update";
  std::optional<std::string> title;
  std::optional<std::string> updatedAt;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionInfoUpdate, (), (title, updatedAt, _meta))

struct CurrentModeUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "current_mode_update";
  std::string currentModeId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(CurrentModeUpdate, (), (currentModeId, _meta))

/// The full set of config options, after one changed other than through session/set_config_option.
struct ConfigOptionUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "config_option_update";
  std::vector<SessionConfigOption> configOptions;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ConfigOptionUpdate, (), (configOptions, _meta))

/// How full the session's context window is (tokens), after a model call.
struct UsageUpdate {
  static constexpr std::string_view kTagKey = "sessionUpdate", kTag = "usage_update";
  std::int64_t used = 0;
  std::int64_t size = 0;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(UsageUpdate, (), (used, size, _meta))

using SessionUpdate = std::variant<UserMessageChunk, AgentMessageChunk, AgentThoughtChunk, ToolCall, ToolCallUpdate,
                                   Plan, AvailableCommandsUpdate, SessionInfoUpdate, CurrentModeUpdate,
                                   ConfigOptionUpdate, UsageUpdate>;

struct SessionNotification {
  std::string sessionId;
  SessionUpdate update;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionNotification, (), (sessionId, update, _meta))

} // namespace acp::protocol
