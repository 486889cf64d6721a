#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "handlers/replay.hpp"
#include "handlers/session_lookup.hpp"
#include "store/session_store.hpp"

#include <boost/asio/post.hpp>

namespace acp::handlers {

boost::asio::awaitable<protocol::EmptyResponse> session_load(HandlerContext& ctx, protocol::LoadSessionRequest req) {
  store::SessionHeader header = co_await find_stored_session(ctx, req.sessionId, req.cwd);
  // Replay streams from the pool thread; each update is posted to the connection in order, and the
  // answer below is queued after all of them (session/load rule: history first, then the response).
  auto replay = [&ctx, id = req.sessionId] {
    Replayer replayer;
    std::vector<protocol::SessionUpdate> updates;
    ctx.store().read_events(id, [&](boost::json::object&& event) {
      replayer.on_event(event, updates);
      for (auto& u : updates) {
        boost::asio::post(ctx.executor, [&ctx, note = protocol::SessionNotification{id, std::move(u), std::nullopt}] {
          ctx.notify(note);
        });
      }
      updates.clear();
    });
  };
  co_await run_blocking(ctx, replay);
  attach_session(ctx, header, req.additionalDirectories);
  co_return protocol::EmptyResponse{};
}

} // namespace acp::handlers
