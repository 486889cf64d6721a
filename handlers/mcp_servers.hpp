// The client's `mcpServers` (session/new, load, resume): checked, then started for the session.
#pragma once

#include "engine/session.hpp"
#include "handlers/handler_context.hpp"
#include "mcp/server.hpp"
#include "support/config.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace acp::handlers {

/// The servers of `servers` (stdio ones to run in `cwd`) with `config`'s limits (mcpCallTimeoutMs).
/// Throws engine::InvalidInput with the entry's JSON Pointer (/mcpServers/1/command) for a malformed
/// entry: a bad URL, a header whose name is not an HTTP field name or whose value holds CR or LF.
std::vector<mcp::ServerSpec> mcp_server_specs(const boost::json::array& servers, const std::string& cwd,
                                             const support::Config& config);

/// Replaces the session's MCP servers with `specs` (the old set is stopped first) and returns once
/// each new one started or failed; a failure is logged and never fails the request.
boost::asio::awaitable<void> use_mcp_servers(HandlerContext& ctx, const std::shared_ptr<engine::Session>& session,
                                            std::vector<mcp::ServerSpec>& specs);

} // namespace acp::handlers
