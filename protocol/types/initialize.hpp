// initialize and authenticate: capabilities, agent identity (https://agentclientprotocol.com/protocol/initialization).
#pragma once

#include "protocol/types/content.hpp"

namespace acp::protocol {

inline constexpr int kProtocolVersion = 1;

struct InitializeRequest {
  std::int64_t protocolVersion = 0;
  std::optional<boost::json::object> clientCapabilities;  ///< kept as sent: tools read fs and terminal from it
  std::optional<boost::json::object> clientInfo;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(InitializeRequest, (), (protocolVersion, clientCapabilities, clientInfo, _meta))

struct PromptCapabilities {
  bool image = false;
  bool audio = false;
  bool embeddedContext = false;
};
BOOST_DESCRIBE_STRUCT(PromptCapabilities, (), (image, audio, embeddedContext))

struct McpCapabilities {
  bool http = false;
  bool sse = false;
};
BOOST_DESCRIBE_STRUCT(McpCapabilities, (), (http, sse))

/// Each present member means "supported" ({}), per the ACP schema.
struct SessionCapabilities {
  std::optional<boost::json::object> list;
  std::optional<boost::json::object> resume;
  std::optional<boost::json::object> close;
  std::optional<boost::json::object> delete_;
  std::optional<boost::json::object> additionalDirectories;
  std::optional<boost::json::object> fork;  ///< unstable in ACP (session/fork)
};
BOOST_DESCRIBE_STRUCT(SessionCapabilities, (), (list, resume, close, delete_, additionalDirectories, fork))

/// `logout` present ({}) = the logout method is supported.
struct AgentAuthCapabilities {
  std::optional<boost::json::object> logout;
};
BOOST_DESCRIBE_STRUCT(AgentAuthCapabilities, (), (logout))

struct AgentCapabilities {
  bool loadSession = false;
  PromptCapabilities promptCapabilities;
  McpCapabilities mcpCapabilities;
  SessionCapabilities sessionCapabilities;
  std::optional<AgentAuthCapabilities> auth = {};
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AgentCapabilities, (), (loadSession, promptCapabilities, mcpCapabilities, sessionCapabilities, auth, _meta))

struct Implementation {
  std::string name;
  std::optional<std::string> title;
  std::string version;
};
BOOST_DESCRIBE_STRUCT(Implementation, (), (name, title, version))

/// `type` "agent" (the client calls authenticate) or "terminal" (the client runs the agent's own
/// command with `args` appended in a terminal, and reconnects once it exited 0).
struct AuthMethod {
  std::string id;
  std::string name;
  std::optional<std::string> description;
  std::optional<std::string> type;
  std::optional<std::vector<std::string>> args = {};  ///< terminal only
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AuthMethod, (), (id, name, description, type, args, _meta))

struct InitializeResponse {
  std::int64_t protocolVersion = kProtocolVersion;
  AgentCapabilities agentCapabilities;
  std::vector<AuthMethod> authMethods;
  std::optional<Implementation> agentInfo;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(InitializeResponse, (), (protocolVersion, agentCapabilities, authMethods, agentInfo, _meta))

struct AuthenticateRequest {
  std::string methodId;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AuthenticateRequest, (), (methodId, _meta))

/// logout takes nothing (https://agentclientprotocol.com/protocol/initialization: auth.logout).
struct LogoutRequest {
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(LogoutRequest, (), (_meta))

struct EmptyResponse {
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(EmptyResponse, (), (_meta))

} // namespace acp::protocol
