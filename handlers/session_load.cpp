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

#include <boost/asio/co_spawn.hpp>

#include <future>
#include <stdexcept>

namespace acp::handlers {

namespace {

// History is held back until this much is ready, so a log that turns out unreadable part-way
// answers with an error and no partial history; larger logs stream (memory stays bounded).
constexpr std::size_t kHoldBackBytes = 8u << 20;
constexpr std::size_t kBatchBytes = 256u << 10;

// Replays one log on the thread pool: translates and serialises each event's updates there, and
// hands frames to the connection in batches through ctx.send_frames, the outbox's awaitable send,
// which suspends until the client has made room. The store reads through a synchronous callback,
// so this thread waits for the previous batch's send to complete (one batch in flight while the
// next is built) — woken by the outbox, never by polling. When a send is refused (shutdown, the
// client stopped reading) the replay stops. Notes the latest request/header on the way (the
// session's model is restored from it).
void replay_log(HandlerContext& ctx, const std::string& id, std::string& logged_provider, std::string& logged_model) {
  Replayer replayer;
  std::vector<protocol::SessionUpdate> updates;
  std::vector<std::string> batch;
  std::size_t batch_bytes = 0;
  bool streaming = false;
  std::future<bool> in_flight;
  auto delivered = [&] { return !in_flight.valid() || in_flight.get(); };
  auto hand_over = [&] {
    if (!delivered()) throw std::runtime_error("replay stopped: the connection is closing");
    std::promise<bool> sent;
    in_flight = sent.get_future();
    boost::asio::co_spawn(
        ctx.executor, [send = ctx.send_frames, id, frames = std::move(batch)]() mutable { return send(id, std::move(frames)); },
        [sent = std::move(sent)](std::exception_ptr error, bool ok) mutable { sent.set_value(!error && ok); });
    batch.clear();
    batch_bytes = 0;
  };
  // A replay queued behind others on the pool may start after the connection began closing: an
  // empty send answers at once whether frames are still wanted.
  hand_over();
  if (!delivered()) throw std::runtime_error("replay stopped: the connection is closing");
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
  if (!delivered()) throw std::runtime_error("replay stopped: the connection is closing");
}

} // namespace

boost::asio::awaitable<protocol::LoadSessionResponse> session_load(HandlerContext& ctx, protocol::LoadSessionRequest req) {
  require_provider_key(ctx);
  store::SessionHeader header = co_await find_stored_session(ctx, req.sessionId, req.cwd);
  // Frames are queued on the session's stream in order, and the answer below goes to the same
  // stream after all of them (the session/load rule: the whole history first, then the response).
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
