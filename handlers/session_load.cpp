#include "handlers/handlers.hpp"
#include "engine/permission_log.hpp"
#include "handlers/mcp_servers.hpp"
#include "handlers/session_attach.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/replay.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/text_frames.hpp"

#include <boost/asio/co_spawn.hpp>

#include <future>
#include <stdexcept>

namespace acp::handlers {

namespace {

// History is held back until this much is ready, so a log that turns out unreadable part-way
// answers with an error and no partial history; larger logs stream (memory stays bounded).
constexpr std::size_t kHoldBackBytes = 8u << 20;
constexpr std::size_t kBatchBytes = 256u << 10;

// Translates one log's events into session/update frames on the pool thread that reads it, and
// hands them to the connection in batches through the channel's send_frames, the outbox's awaitable send,
// which suspends until the client has made room. The store reads through a synchronous callback,
// so this thread waits for the previous batch's send to complete (one batch in flight while the
// next is built) — woken by the outbox, never by polling. When a send is refused (shutdown, the
// client stopped reading) the replay stops.
class ReplaySink {
public:
  ReplaySink(HandlerContext& ctx, std::string id, ReplayPlaces places)
      : ctx_(ctx), id_(id), replayer_(std::move(places)), text_frames_(std::move(id)) {}

  void operator()(boost::json::object&& event_in) {
    // Text and reasoning deltas (most of a replay) are framed straight from the event's text, in
    // pieces when one frame cannot hold it: no update, no copy of the text. Each frame is the one
    // the general path below would write.
    std::string_view text, id;
    if (std::size_t kind = replayer_.plain_chunk(event_in, text, id)) {
      const std::size_t budget = text_frames_.text_budget();
      std::string_view piece = first_json_piece(text, budget);
      if (auto frame = text_frames_.frame_text(kind, piece, id)) {
        add(std::move(*frame));
        for (text.remove_prefix(piece.size()); !text.empty(); text.remove_prefix(piece.size())) {
          piece = first_json_piece(text, budget);
          add(std::move(*text_frames_.frame_text(kind, piece, id)));
        }
        return;
      }
      // No template (never for these kinds): the general path, as if on_event had made the update.
      protocol::TextContent block{std::string(text), std::nullopt, std::nullopt};
      translated_.push_back(kind == 1 ? protocol::SessionUpdate(protocol::AgentMessageChunk{std::move(block), std::string(id), {}})
                                      : protocol::SessionUpdate(protocol::AgentThoughtChunk{std::move(block), std::string(id), {}}));
      event_in = boost::json::object();
    } else {
      // The event dies once translated, before its frames are made: a big message is held twice
      // at most (the event and its update), never three or four times.
      boost::json::object event = std::move(event_in);
      replayer_.on_event(event, translated_);
    }
    for (auto& u : translated_) {
      for_each_split(std::move(u), text_frames_.text_budget(), [&](protocol::SessionUpdate&& piece) {
        if (auto text = text_frames_.frame(piece)) {
          add(std::move(*text));
        } else {
          add(notification_frame(protocol::SessionNotification{id_, std::move(piece), std::nullopt}));
        }
      });
    }
    translated_.clear();
  }

  void add(std::string frame) {
    batch_.push_back(std::move(frame));
    batch_bytes_ += batch_.back().size();
    if (!streaming_ && batch_bytes_ >= kHoldBackBytes) streaming_ = true;
    if (streaming_ && batch_bytes_ >= kBatchBytes) hand_over();
  }

  /// Hands the batch over (an empty one too: it answers whether frames are still wanted). Throws
  /// when the connection no longer takes frames.
  void hand_over() {
    if (!delivered()) throw std::runtime_error("replay stopped: the connection is closing");
    std::promise<bool> sent;
    in_flight_ = sent.get_future();
    boost::asio::co_spawn(
        ctx_.executor, [channel = &ctx_.channel, id = id_, frames = std::move(batch_)]() mutable {
          return channel->send_frames(id, std::move(frames));
        },
        [sent = std::move(sent)](std::exception_ptr error, bool ok) mutable { sent.set_value(!error && ok); });
    batch_.clear();
    batch_bytes_ = 0;
  }

  /// Waits for the batch in flight; false when it was refused.
  bool delivered() { return !in_flight_.valid() || in_flight_.get(); }

private:
  HandlerContext& ctx_;
  std::string id_;
  Replayer replayer_;
  TextChunkFrames text_frames_;  ///< text chunks, most of a replay, without JSON trees
  std::vector<protocol::SessionUpdate> translated_;
  std::vector<std::string> batch_;
  std::size_t batch_bytes_ = 0;
  bool streaming_ = false;
  std::future<bool> in_flight_;
};

} // namespace

boost::asio::awaitable<protocol::LoadSessionResponse> session_load(HandlerContext& ctx, protocol::LoadSessionRequest req) {
  require_provider_key(ctx);
  // Before the first suspension: a prompt sent right behind this load waits for it (Engine::attached).
  const engine::Engine::Attaching attaching(ctx.engine, req.sessionId);
  std::optional<std::vector<mcp::ServerSpec>> servers;
  if (req.mcpServers) servers = mcp_server_specs(*req.mcpServers, req.cwd, ctx.config);
  engine::StoredSession stored = co_await ctx.engine.find_stored(req.sessionId, req.cwd);
  const store::SessionHeader& header = stored.header;
  if (req.additionalDirectories) co_await ctx.engine.check_directories(*req.additionalDirectories);
  // Attached here already: the load waits in line behind the session's running turn and queued
  // prompts, so its replay holds all of them and none of their updates follows its answer.
  engine::QueueSlot slot;
  if (std::shared_ptr<engine::Session> waited_on = ctx.engine.find(req.sessionId)) {
    const std::shared_ptr<engine::Turn> no_turn;  // a load: nothing of it to cancel
    auto waiting = ctx.engine.enqueue(req.sessionId, no_turn, 0);
    slot = co_await std::move(waiting);
    // A session/close or session/delete that arrived while this load waited wins: attaching now
    // would bring back a session its client closed (or whose log is gone).
    if (waited_on->closed) throw engine::SessionNotFound(req.sessionId);
  }
  // Frames are queued on the session's stream in order, and the answer below goes to the same
  // stream after all of them: every update of a load, the commands included, comes before its
  // response (https://agentclientprotocol.com/protocol/session-setup#loading-sessions).
  auto sink = std::make_shared<ReplaySink>(ctx, req.sessionId, ReplayPlaces{header.cwd.value_or(""), ctx.config.harness_home, req.sessionId});
  // The "always" choices and the mode are folded on the reading thread as the events pass; the
  // session takes them once the read is over (an already attached session has them in memory already).
  auto choices = std::make_shared<engine::LoggedChoices>();
  engine::EventSink replay = [sink, choices](boost::json::object&& e) {
    choices->observe(e);
    (*sink)(std::move(e));
  };
  // On the pool, before and after the log: a replay queued behind others may start after the
  // connection began closing; the last batch is in the outbox before the answer is queued.
  std::function<void()> boundary = [sink] {
    sink->hand_over();
    if (!sink->delivered()) throw std::runtime_error("replay stopped: the connection is closing");
  };
  auto read = ctx.engine.read_log(req.sessionId, replay, boundary);
  const std::pair<std::string, std::string> logged = co_await std::move(read);
  co_return co_await attach_stored_session(ctx, stored, req, logged, *choices, servers);
}

} // namespace acp::handlers
