#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/slash_commands.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/log.hpp"
#include "support/paths.hpp"

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <chrono>

namespace acp::handlers {

boost::asio::awaitable<protocol::NewSessionResponse> session_new(HandlerContext& ctx, protocol::NewSessionRequest req) {
  require_provider_key(ctx);
  if (!support::is_absolute_path(req.cwd)) throw jsonrpc::invalid_params("/cwd", "must be an absolute path");
  if (req.additionalDirectories) {
    for (std::size_t i = 0; i < req.additionalDirectories->size(); ++i)
      if (!support::is_absolute_path((*req.additionalDirectories)[i]))
        throw jsonrpc::invalid_params("/additionalDirectories/" + std::to_string(i), "must be an absolute path");
  }
  static thread_local boost::uuids::random_generator uuid_generator;
  SessionState state;
  state.id = boost::uuids::to_string(uuid_generator());
  state.cwd = req.cwd;
  state.header.id = state.id;
  state.header.cwd = req.cwd;
  state.header.createdAt = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  state.history_seq = 0;  // a new session's log is empty
  if (req.additionalDirectories) state.additional_directories = *req.additionalDirectories;
  if (req.mcpServers && !req.mcpServers->empty())
    log::info("session " + state.id + ": ignoring " + std::to_string(req.mcpServers->size()) +
              " MCP server(s): dsh-acp offers the model no tools");
  std::string id = state.id;
  ctx.sessions.add(std::move(state));
  advertise_commands(ctx, id);
  co_return protocol::NewSessionResponse{id, model_config_options(ctx.config, *ctx.sessions.find(id)), std::nullopt};
}

} // namespace acp::handlers
