#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/replay.hpp"
#include "handlers/slash_commands.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <thread>

namespace acp::handlers {

namespace {

// History is held back until this much is ready, so a log that turns out unreadable part-way
// answers with an error and no partial history; larger logs stream (memory stays bounded).
constexpr std::size_t kHoldBackBytes = 8u << 20;
constexpr std::size_t kBatchBytes = 256u << 10;
constexpr std::size_t kOutboxHighWater = 16u << 20;

// Translates one log's events into session/update frames on the pool thread that reads it, and
// hands them to the connection in batches, waiting while the client is slow to read.
class ReplaySink {
public:
  ReplaySink(HandlerContext& ctx, std::string id) : ctx_(ctx), id_(std::move(id)) {}

  void operator()(boost::json::object&& event) {
    replayer_.on_event(event, updates_);
    for (auto& u : updates_) {
      protocol::SessionNotification note{id_, std::move(u), std::nullopt};
      batch_.push_back(jsonrpc::serialize_notification(methods::session_update, wire::encode(note)));
      batch_bytes_ += batch_.back().size();
    }
    updates_.clear();
    if (!streaming_ && batch_bytes_ >= kHoldBackBytes) streaming_ = true;
    if (streaming_ && batch_bytes_ >= kBatchBytes) hand_over();
  }

  void hand_over() {
    if (batch_.empty()) return;
    while (ctx_.queued_bytes() > kOutboxHighWater) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ctx_.send_frames(std::move(batch_));
    batch_.clear();
    batch_bytes_ = 0;
  }

private:
  HandlerContext& ctx_;
  std::string id_;
  Replayer replayer_;
  std::vector<protocol::SessionUpdate> updates_;
  std::vector<std::string> batch_;
  std::size_t batch_bytes_ = 0;
  bool streaming_ = false;
};

} // namespace

boost::asio::awaitable<protocol::LoadSessionResponse> session_load(HandlerContext& ctx, protocol::LoadSessionRequest req) {
  require_provider_key(ctx);
  store::SessionHeader header = co_await ctx.engine.find_stored(req.sessionId, req.cwd);
  // Frames are posted to the connection in order, and the answer below is queued after all of
  // them (the session/load rule: the whole history first, then the response).
  auto sink = std::make_shared<ReplaySink>(ctx, req.sessionId);
  engine::EventSink replay = [sink](boost::json::object&& e) { (*sink)(std::move(e)); };
  auto [provider, model] = co_await ctx.engine.read_log(req.sessionId, replay);
  sink->hand_over();
  // The frames were posted to the connection: let them go first, the answer comes after them.
  co_await boost::asio::post(ctx.executor, boost::asio::use_awaitable);
  auto session = ctx.engine.attach(header, req.additionalDirectories, provider, model);
  advertise_commands(ctx, session->id);
  co_return protocol::LoadSessionResponse{model_config_options(ctx, *session), std::nullopt};
}

} // namespace acp::handlers
