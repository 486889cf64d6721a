#include "handlers/handlers.hpp"
#include "handlers/mcp_servers.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/replay.hpp"
#include "handlers/session_modes.hpp"
#include "handlers/slash_commands.hpp"
#include "protocol/jsonrpc.hpp"

#include <memory>
#include <type_traits>
#include <variant>

namespace acp::handlers {

namespace {

// The fork point a client may name: a messageId the source's chunks carried (message_id.hpp), live
// or on session/load. The fork then holds the history through that message (store/fork_seed.hpp).
constexpr std::string_view kForkAtKey = "dsh-acp/forkAtMessage";
constexpr std::string_view kForkAtPointer = "/_meta/dsh-acp~1forkAtMessage";

// Message ids are derived from the session id and each message's place in the log, so the source's
// events are put through the replay translator with the source's id, and the first event whose
// update carries the id is where the message is in the log.
std::function<bool(const boost::json::object&)> find_message(HandlerContext& ctx, const std::string& source_id,
                                                             std::string wanted) {
  auto replayer = std::make_shared<Replayer>(ReplayPlaces{"", ctx.config.harness_home, source_id});
  return [replayer, wanted = std::move(wanted), updates = std::vector<protocol::SessionUpdate>()](
             const boost::json::object& event) mutable {
    updates.clear();
    replayer->on_event(event, updates);
    for (const auto& update : updates) {
      const bool found = std::visit(
          [&](const auto& u) {
            if constexpr (requires { u.messageId; }) return u.messageId && *u.messageId == wanted;
            else return false;
          },
          update);
      if (found) return true;
    }
    return false;
  };
}

} // namespace

boost::asio::awaitable<protocol::ForkSessionResponse> session_fork(HandlerContext& ctx, protocol::ForkSessionRequest req) {
  require_provider_key(ctx);
  std::vector<mcp::ServerSpec> servers;
  if (req.mcpServers) servers = mcp_server_specs(*req.mcpServers, req.cwd, ctx.config);
  engine::ForkRequest fork;
  fork.source_id = req.sessionId;
  fork.cwd = req.cwd;
  fork.additional_directories = req.additionalDirectories.value_or(std::vector<std::string>{});
  if (req._meta) {
    if (const boost::json::value* at = req._meta->if_contains(kForkAtKey)) {
      if (!at->is_string() || at->get_string().empty())
        throw jsonrpc::invalid_params(std::string(kForkAtPointer), "must be a messageId (a non-empty string)");
      fork.message_id = std::string(at->get_string());
      fork.fork_point = find_message(ctx, req.sessionId, *fork.message_id);
      fork.fork_point_path = std::string(kForkAtPointer);
    }
  }
  auto session = co_await ctx.engine.fork_session(fork);
  // The answer waits for them: the first prompt already has their tools.
  co_await use_mcp_servers(ctx, session, servers);
  advertise_commands_after(ctx, *session);
  co_return protocol::ForkSessionResponse{session->id, session_modes(*session), session_config_options(ctx, *session),
                                         std::nullopt};
}

} // namespace acp::handlers
