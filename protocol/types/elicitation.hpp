// elicitation/create, agent → client: a question put to the user as a form
// (https://agentclientprotocol.com, schema v1 1.21 "elicitation"). We send only the form mode,
// scoped to a session and the tool call that asks.
#pragma once

#include "protocol/types/content.hpp"

#include <map>

namespace acp::protocol {

/// One string field of the form; `enum` makes it a choice.
struct ElicitationStringProperty {
  std::string type = "string";
  std::optional<std::string> title;
  std::optional<std::string> description;
  std::optional<std::vector<std::string>> enum_;
};
BOOST_DESCRIBE_STRUCT(ElicitationStringProperty, (), (type, title, description, enum_))

struct ElicitationSchema {
  std::string type = "object";
  std::map<std::string, ElicitationStringProperty> properties;
  std::vector<std::string> required;
};
BOOST_DESCRIBE_STRUCT(ElicitationSchema, (), (type, properties, required))

struct CreateElicitationRequest {
  std::string sessionId;
  std::optional<std::string> toolCallId;
  std::string mode = "form";
  std::string message;
  ElicitationSchema requestedSchema;
};
BOOST_DESCRIBE_STRUCT(CreateElicitationRequest, (), (sessionId, toolCallId, mode, message, requestedSchema))

/// `action` is accept, decline or cancel (others are reserved: read as cancel); `content` holds the
/// fields on accept, each a string, number, boolean or array of strings.
struct CreateElicitationResponse {
  std::string action;
  std::optional<boost::json::object> content;
};
BOOST_DESCRIBE_STRUCT(CreateElicitationResponse, (), (action, content))

} // namespace acp::protocol
