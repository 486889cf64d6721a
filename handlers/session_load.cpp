#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/replay.hpp"
#include "handlers/session_lookup.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"
#include "store/session_store.hpp"

#include <chrono>
#include <thread>

namespace acp::handlers {

namespace {

// History is held back until this much is ready, so a log that turns out unreadable part-way
// answers with an error and no partial history; larger logs stream (memory stays bounded).
constexpr std::size_t kHoldBackBytes = 8u << 20;
constexpr std::size_t kBatchBytes = 256u << 10;
constexpr std::size_t kOutboxHighWater = 16u << 20;

// Replays one log on the thread pool: translates and serialises each event's updates there, and
// hands frames to the connection in batches, waiting while the client is slow to read. Notes the
// latest request/header on the way (the session's model is restored from it).
void replay_log(HandlerContext& ctx, const std::string& id, std::string& logged_provider, std::string& logged_model) {
  Replayer replayer;
  std::vector<protocol::SessionUpdate> updates;
  std::vector<std::string> batch;
  std::size_t batch_bytes = 0;
  bool streaming = false;
  auto hand_over = [&] {
    while (ctx.queued_bytes() > kOutboxHighWater) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ctx.send_frames(std::move(batch));
    batch.clear();
    batch_bytes = 0;
  };
  ctx.store().read_events(id, [&](boost::json::object&& event) {
    note_request_header(event, logged_provider, logged_model);
    replayer.on_event(event, updates);
    for (auto& u : updates) {
      protocol::SessionNotification note{id, std::move(u), std::nullopt};
      batch.push_back(jsonrpc::serialize_notification(methods::session_update, wire::encode(note)));
      batch_bytes += batch.back().size();
    }
    updates.clear();
    if (!streaming && batch_bytes >= kHoldBackBytes) streaming = true;
    if (streaming && batch_bytes >= kBatchBytes) hand_over();
  });
  if (!batch.empty()) hand_over();
}

} // namespace

boost::asio::awaitable<protocol::LoadSessionResponse> session_load(HandlerContext& ctx, protocol::LoadSessionRequest req) {
  require_provider_key(ctx);
  store::SessionHeader header = co_await find_stored_session(ctx, req.sessionId, req.cwd);
  // Frames are posted to the connection in order, and the answer below is queued after all of
  // them (the session/load rule: the whole history first, then the response).
  std::string logged_provider, logged_model;
  auto replay = [&ctx, id = req.sessionId, &logged_provider, &logged_model] {
    replay_log(ctx, id, logged_provider, logged_model);
  };
  co_await run_blocking(ctx, replay);
  bool was_attached = ctx.sessions.find(req.sessionId) != nullptr;
  attach_session(ctx, header, req.additionalDirectories);
  SessionState* session = ctx.sessions.find(req.sessionId);
  // A session already attached here keeps its in-memory choice (it may not be logged yet).
  if (!was_attached) restore_model(ctx.config, *session, logged_provider, logged_model);
  co_return protocol::LoadSessionResponse{model_config_options(ctx.config, *session), std::nullopt};
}

} // namespace acp::handlers
