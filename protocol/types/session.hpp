// Session setup and prompt turns: session/new, load, resume, list, close, delete, prompt, cancel.
#pragma once

#include "protocol/types/content.hpp"

#include <boost/describe/enum.hpp>

namespace acp::protocol {

struct NewSessionRequest {
  std::string cwd;
  std::optional<boost::json::array> mcpServers;  ///< checked by handlers/mcp_servers (stdio only)
  std::optional<std::vector<std::string>> additionalDirectories;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(NewSessionRequest, (), (cwd, mcpServers, additionalDirectories, _meta))

/// One value of a select-type session config option.
struct SessionConfigSelectOption {
  std::string value;
  std::string name;
  std::optional<std::string> description;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionConfigSelectOption, (), (value, name, description, _meta))

/// A session config option (https://agentclientprotocol.com/protocol/session-config-options). We only offer `type: "select"` (the model and the mode).
struct SessionConfigOption {
  std::string id;
  std::string name;
  std::optional<std::string> description;
  std::optional<std::string> category;
  std::string type = "select";
  std::string currentValue;
  std::vector<SessionConfigSelectOption> options;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionConfigOption, (), (id, name, description, category, type, currentValue, options, _meta))

/// One session mode a client may switch to (session/set_mode).
struct SessionMode {
  std::string id;
  std::string name;
  std::optional<std::string> description;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionMode, (), (id, name, description, _meta))

/// `modes` in the session/new, load and resume answers.
struct SessionModeState {
  std::string currentModeId;
  std::vector<SessionMode> availableModes;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionModeState, (), (currentModeId, availableModes, _meta))

struct NewSessionResponse {
  std::string sessionId;
  std::optional<SessionModeState> modes;
  std::optional<std::vector<SessionConfigOption>> configOptions;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(NewSessionResponse, (), (sessionId, modes, configOptions, _meta))

/// session/load and session/resume answers.
struct LoadSessionResponse {
  std::optional<SessionModeState> modes;
  std::optional<std::vector<SessionConfigOption>> configOptions;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(LoadSessionResponse, (), (modes, configOptions, _meta))

/// session/set_mode (answered `{}`).
struct SetSessionModeRequest {
  std::string sessionId;
  std::string modeId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SetSessionModeRequest, (), (sessionId, modeId, _meta))

/// session/set_config_option: `value` is a value id, or a bool with `type: "boolean"` (kept raw so
/// the handler can answer a wrong kind with its JSON Pointer).
struct SetSessionConfigOptionRequest {
  std::string sessionId;
  std::string configId;
  boost::json::value value;
  std::optional<std::string> type;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SetSessionConfigOptionRequest, (), (sessionId, configId, value, type, _meta))

struct SetSessionConfigOptionResponse {
  std::vector<SessionConfigOption> configOptions;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SetSessionConfigOptionResponse, (), (configOptions, _meta))

struct LoadSessionRequest {
  std::string sessionId;
  std::string cwd;
  std::optional<boost::json::array> mcpServers;
  std::optional<std::vector<std::string>> additionalDirectories;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(LoadSessionRequest, (), (sessionId, cwd, mcpServers, additionalDirectories, _meta))

/// session/fork (unstable in ACP: schema.unstable.json's ForkSessionRequest). The fork point, when the
/// client asks for one, is `_meta["dsh-acp/forkAtMessage"]` (handlers/session_fork.cpp).
struct ForkSessionRequest {
  std::string sessionId;
  std::string cwd;
  std::optional<std::vector<std::string>> additionalDirectories;
  std::optional<boost::json::array> mcpServers;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ForkSessionRequest, (), (sessionId, cwd, additionalDirectories, mcpServers, _meta))

/// ForkSessionResponse has session/new's answer's members.
using ForkSessionResponse = NewSessionResponse;

/// session/resume: like load, without replay.
using ResumeSessionRequest = LoadSessionRequest;

struct ListSessionsRequest {
  std::optional<std::string> cwd;
  std::optional<std::string> cursor;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ListSessionsRequest, (), (cwd, cursor, _meta))

struct SessionInfo {
  std::string sessionId;
  std::string cwd;
  std::optional<std::string> title;
  std::optional<std::string> updatedAt;  ///< ISO 8601
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionInfo, (), (sessionId, cwd, title, updatedAt, _meta))

struct ListSessionsResponse {
  std::vector<SessionInfo> sessions;
  std::optional<std::string> nextCursor;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ListSessionsResponse, (), (sessions, nextCursor, _meta))

struct SessionIdRequest {
  std::string sessionId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(SessionIdRequest, (), (sessionId, _meta))

struct PromptRequest {
  std::string sessionId;
  std::vector<ContentBlock> prompt;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(PromptRequest, (), (sessionId, prompt, _meta))

enum class StopReason { end_turn, max_tokens, max_turn_requests, refusal, cancelled };
BOOST_DESCRIBE_ENUM(StopReason, end_turn, max_tokens, max_turn_requests, refusal, cancelled)

/// What a turn's model calls took, summed (PromptResponse `usage`, the schema's Usage: an unstable
/// field of ACP v1's draft, sent because clients that know it show it and others ignore it).
struct TurnUsage {
  std::int64_t totalTokens = 0;
  std::int64_t inputTokens = 0;
  std::int64_t outputTokens = 0;
  std::optional<std::int64_t> thoughtTokens;
  std::optional<std::int64_t> cachedReadTokens;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(TurnUsage, (), (totalTokens, inputTokens, outputTokens, thoughtTokens, cachedReadTokens, _meta))

struct PromptResponse {
  StopReason stopReason = StopReason::end_turn;
  Meta _meta;
  std::optional<TurnUsage> usage = {};  ///< last, so `{stop, nullopt}` initialisers keep meaning stop and _meta
};
BOOST_DESCRIBE_STRUCT(PromptResponse, (), (stopReason, _meta, usage))

struct CancelNotification {
  std::string sessionId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(CancelNotification, (), (sessionId, _meta))

} // namespace acp::protocol
