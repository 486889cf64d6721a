// The per-session model choice offered as an ACP session config option (`configOptions` entry with
// id "model", category "model", type "select"; https://agentclientprotocol.com/protocol/session-config-options). The choices and the logging of
// `request/header` live in the engine; this is only their wire form. The echo provider has no
// models: no option.
#pragma once

#include "handlers/handler_context.hpp"
#include "protocol/types/session.hpp"

#include <optional>
#include <vector>

namespace acp::handlers {

inline constexpr const char* kModelOptionId = "model";

/// The session's configOptions; nullopt when the provider offers no models.
std::optional<std::vector<protocol::SessionConfigOption>> model_config_options(const HandlerContext& ctx,
                                                                                const engine::Session& session);

} // namespace acp::handlers
