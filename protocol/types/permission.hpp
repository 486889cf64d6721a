// session/request_permission, agent → client (https://agentclientprotocol.com/protocol/tool-calls).
// The request's toolCall is the card's ToolCallUpdate, encoded where it is built.
#pragma once

#include "protocol/types/content.hpp"

namespace acp::protocol {

/// One choice offered; `kind` is allow_once, allow_always, reject_once or reject_always.
struct PermissionOption {
  std::string optionId;
  std::string name;
  std::string kind;
};
BOOST_DESCRIBE_STRUCT(PermissionOption, (), (optionId, name, kind))

/// `outcome` is "selected" (with `optionId`) or "cancelled".
struct RequestPermissionOutcome {
  std::string outcome;
  std::optional<std::string> optionId;
};
BOOST_DESCRIBE_STRUCT(RequestPermissionOutcome, (), (outcome, optionId))

struct RequestPermissionResponse {
  RequestPermissionOutcome outcome;
};
BOOST_DESCRIBE_STRUCT(RequestPermissionResponse, (), (outcome))

} // namespace acp::protocol
