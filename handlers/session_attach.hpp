// How session/load and session/resume end, once each has read what it needs from the log: the
// stored session is attached and answered for in one place, so the two cannot drift apart.
#pragma once

#include "engine/permission_log.hpp"
#include "handlers/handler_context.hpp"
#include "mcp/server.hpp"
#include "protocol/types/session.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace acp::handlers {

/// Attaches `stored` with the model its log chose (`logged`: provider, model). A session not
/// attached before takes the "always" rules and the mode folded into `choices`; one already attached
/// keeps its own (they are in memory). `servers`, when the request named any, replace the session's
/// MCP servers. The commands are advertised before the answer, which this returns.
boost::asio::awaitable<protocol::LoadSessionResponse> attach_stored_session(
    HandlerContext& ctx, const engine::StoredSession& stored, const protocol::LoadSessionRequest& req,
    const std::pair<std::string, std::string>& logged, engine::LoggedChoices& choices,
    std::optional<std::vector<mcp::ServerSpec>>& servers);

} // namespace acp::handlers
