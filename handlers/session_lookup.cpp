#include "handlers/session_lookup.hpp"

#include "handlers/blocking.hpp"
#include "handlers/slash_commands.hpp"
#include "protocol/jsonrpc.hpp"
#include "store/errors.hpp"
#include "store/session_store.hpp"
#include "support/iso_time.hpp"
#include "support/paths.hpp"


namespace acp::handlers {

boost::asio::awaitable<store::SessionHeader> find_stored_session(HandlerContext& ctx, const std::string& session_id,
                                                                 const std::string& cwd) {
  if (!support::is_absolute_path(cwd)) throw jsonrpc::invalid_params("/cwd", "must be an absolute path");
  std::optional<store::SessionHeader> attached;
  if (SessionState* s = ctx.sessions.find(session_id)) attached = s->header;
  auto lookup = [&ctx, session_id]() -> std::optional<store::SessionHeader> {
    if (!ctx.store().exists(session_id)) return std::nullopt;
    for (auto& listing : ctx.store().list_sessions())
      if (listing.header.id == session_id) return listing.header;
    // A log the index does not list has no valid header: reading it names the defect.
    ctx.store().read_log(session_id);
    throw store::StoreCorrupt(*ctx.store().find_log(session_id), 1, "invalid session header");
  };
  std::optional<store::SessionHeader> header = std::move(*co_await run_blocking(ctx, lookup));
  if (!header) header = attached;  // created on this connection, nothing written yet
  if (!header) throw jsonrpc::resource_not_found(session_id);
  if (!header->cwd)
    throw jsonrpc::invalid_params("/sessionId", "this session has no working directory and cannot be loaded over ACP");
  if (store::normalize_cwd(cwd) != store::normalize_cwd(*header->cwd))
    throw jsonrpc::invalid_params("/cwd", "does not match the session's working directory " + *header->cwd);
  co_return *header;
}

void attach_session(HandlerContext& ctx, const store::SessionHeader& header,
                    const std::optional<std::vector<std::string>>& additional_directories) {
  advertise_commands(ctx, header.id);
  if (SessionState* existing = ctx.sessions.find(header.id)) {
    if (additional_directories) existing->additional_directories = *additional_directories;
    return;  // keep its running turn and conversation cache
  }
  SessionState state;
  state.id = header.id;
  state.cwd = *header.cwd;
  state.header = header;
  if (additional_directories) state.additional_directories = *additional_directories;
  ctx.sessions.add(std::move(state));
}

std::string iso_time(std::int64_t unix_ms) { return support::iso_time(unix_ms); }

} // namespace acp::handlers
