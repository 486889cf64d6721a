#include "server/connection.hpp"


#include "engine/engine.hpp"
#include "handlers/router.hpp"
#include "support/event.hpp"
#include "handlers/text_chunks.hpp"
#include "support/json_text.hpp"
#include "protocol/methods.hpp"
#include "support/log.hpp"
#include "support/utf8.hpp"
#include "transport/line_framer.hpp"
#include "transport/outbound_calls.hpp"
#include "transport/outbox.hpp"
#include "transport/transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

#include <map>

namespace acp::server {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::string_view kCancelRequest = "$/cancel_request";

// Once shutdown starts, what the client has not read by then is dropped: with the rest of the
// shutdown (turns closing, the store) this keeps the 2 s promise of docs/decisions.md#shutdown.
constexpr std::chrono::milliseconds kShutdownGrace{1500};

// The stream a request's answer goes to: its session's, so it follows that session's updates.
std::string stream_key(const json::value& params) {
  if (const auto* o = params.if_object()) {
    if (const auto* id = o->if_contains("sessionId"); id && id->is_string()) return std::string(id->get_string());
  }
  return {};
}

std::vector<std::string> one_frame(std::string frame) {
  std::vector<std::string> frames;
  frames.push_back(std::move(frame));
  return frames;
}

std::string stream_key_of_frame(const json::value& frame) {
  const json::value* params = frame.is_object() ? frame.get_object().if_contains("params") : nullptr;
  return params ? stream_key(*params) : std::string();
}

// The client as the handlers reach it: notifications and frames through the outbox, requests of
// ours through the outbound calls, which wait for the client's answers.
class OutboxChannel final : public handlers::ClientChannel {
public:
  OutboxChannel(transport::Outbox& outbox, transport::OutboundCalls& calls) : outbox_(outbox), calls_(calls) {}

  void notify(const protocol::SessionNotification& note) override {
    outbox_.push(note.sessionId, handlers::notification_frame(note));
  }
  void notify_frame(const std::string& key, std::string frame) override { outbox_.push(key, std::move(frame)); }
  asio::awaitable<bool> send_frames(std::string key, std::vector<std::string> frames) override {
    return outbox_.send(std::move(key), std::move(frames));
  }
  bool has_client() const noexcept override { return true; }
  asio::awaitable<json::value> call_client(std::string key, std::string method, json::value params) override {
    return calls_.call(std::move(key), std::move(method), std::move(params));
  }
  asio::awaitable<void> room(const std::string& key) override { return outbox_.room(key); }

private:
  transport::Outbox& outbox_;
  transport::OutboundCalls& calls_;
};

} // namespace

struct Connection::Impl {
  Impl(asio::any_io_executor ex, asio::any_io_executor blocking, transport::Transport& transport,
       const support::Config& config, llm::Provider& provider, engine::StoreHandle& store,
       const refs::SessionReferenceService& references, std::string system_prompt)
      : executor(ex), transport(transport),
        outbox(ex, transport, static_cast<std::size_t>(config.max_outbox_bytes)),
        idle(ex), deadline(ex, asio::steady_timer::time_point::max()),
        framer(static_cast<std::size_t>(config.max_frame_bytes)), max_frame_bytes(config.max_frame_bytes),
        engine(engine::EngineServices{config, provider, store, references, std::move(system_prompt)}, ex, blocking),
        channel(outbox, client_calls), context{engine, config, ex, channel},
        client_calls(ex, [this](const std::string& key, std::string frame) { outbox.push(key, std::move(frame)); }) {
    handlers::bind_all(router);
    outbox.on_broken([this] { stop("the client stopped reading its output"); });
  }

  asio::any_io_executor executor;
  transport::Transport& transport;
  transport::Outbox outbox;
  support::Event idle;          ///< notified whenever a request or child task finishes (shutdown waits on it)
  asio::steady_timer deadline;  ///< the shutdown grace period
  transport::LineFramer framer;
  std::int64_t max_frame_bytes;
  engine::Engine engine;
  /// JSON text of an unanswered prompt's id -> its cancellation object (running or waiting in line).
  std::map<std::string, std::shared_ptr<engine::Turn>> running_prompts;
  handlers::Router router;
  OutboxChannel channel;  ///< (holds client_calls, declared below, by reference only)
  handlers::HandlerContext context;
  transport::OutboundCalls client_calls;  ///< requests of ours waiting for the client's answer
  bool initialized = false;
  bool stopping = false;  ///< stop(): read nothing more, dispatch nothing more
  bool deadline_armed = false;
  std::size_t in_flight = 0;
  std::size_t children = 0;  ///< writer, input and output watchers, grace timer
  bool writer_running = false;

  // Child tasks are joined: run() returns only after every one of them has finished.
  void spawn_child(asio::awaitable<void> task, bool* running = nullptr) {
    ++children;
    if (running) *running = true;
    asio::co_spawn(executor, std::move(task), [this, running](std::exception_ptr error) {
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          log::error(std::string("connection task failed: ") + e.what());
        }
      }
      if (running) *running = false;
      --children;
      idle.notify_all();
    });
  }

  // Starts the grace period of the shutdown (idempotent).
  void arm_deadline() {
    if (deadline_armed) return;
    deadline_armed = true;
    deadline.expires_after(kShutdownGrace);
    spawn_child(grace_timer());
  }

  asio::awaitable<void> grace_timer() {
    auto [ec] = co_await deadline.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;  // the shutdown finished in time
    log::warn("shutdown grace period over: dropping " + std::to_string(outbox.queued_bytes()) +
              " undelivered bytes and stopping producers");
    stopping = true;  // input not read by now is not served either
    client_calls.close("the connection is closing");
    engine.stop();    // replays and lock waits still running end now
    transport.cancel_read();
    outbox.abort();
  }

  void stop(const std::string& why) {
    if (stopping) return;
    stopping = true;
    log::info(why + "; shutting down, cancelling " + std::to_string(engine.running_turns()) + " running turn(s)");
    arm_deadline();
    client_calls.close("the connection is closing");
    engine.cancel_all();
    transport.cancel_read();
    outbox.release_reader();
  }

  asio::awaitable<void> watch_output() {
    // (co_await in a local first: GCC 12 miscompiles it inside this `if` condition.)
    bool closed = co_await transport.output_closed();
    if (closed) outbox.fail("the client closed its end of the frame stream");
  }

  // The client may close stdin while the reader is paused by backpressure (and so reads nothing):
  // the shutdown's grace period starts then, not when the queue has drained (it may never drain).
  asio::awaitable<void> watch_input() {
    bool closed = co_await transport.input_closed();
    if (closed) {
      if (!deadline_armed) log::info("input closed by the client");
      arm_deadline();
    }
  }

  // Not a coroutine: the frame is built before anything suspends. Callers keep the returned
  // awaitable in a local and co_await that: GCC 12 destroys temporaries of a co_await expression
  // twice (a crash seen with the RpcError and key temporaries here).
  asio::awaitable<bool> reply_error(std::string key, const jsonrpc::RequestId& id, const jsonrpc::RpcError& error) {
    return outbox.send(std::move(key), one_frame(jsonrpc::serialize_error(id, error)));
  }

  asio::awaitable<void> run_request(jsonrpc::Request request, const handlers::Router::RequestFn* fn,
                                    std::shared_ptr<engine::Turn> turn) {
    // session/fork names its source: its answer belongs to the new session's stream (as session/new's).
    std::string key = request.method == methods::session_fork ? std::string() : stream_key(request.params);
    json::value result;
    std::exception_ptr failure;
    try {
      // The awaitable in a local: its by-value params temporary must not live across the co_await (GCC 12).
      auto call = (*fn)(context, std::move(request.params), std::move(turn));
      result = co_await std::move(call);
    } catch (...) {
      failure = std::current_exception();
    }
    if (request.method == methods::session_prompt) running_prompts.erase(support::to_json_text(jsonrpc::id_to_json(request.id)));
    std::string frame;
    if (failure) {
      jsonrpc::RpcError error = handlers::to_rpc_error(failure);
      log::debug(request.method + " " + jsonrpc::id_to_string(request.id) + " failed: " + error.message());
      frame = jsonrpc::serialize_error(request.id, error);
    } else {
      if (request.method == methods::initialize) initialized = true;
      frame = jsonrpc::serialize_response(request.id, result);
      // session/new: the answer names the session; on its stream it precedes that session's first update.
      if (key.empty()) key = stream_key(result);
    }
    // Waits for room like every producer; false only when the frame cannot be delivered any more.
    auto sending = outbox.send(std::move(key), one_frame(std::move(frame)));
    co_await std::move(sending);
    --in_flight;
    idle.notify_all();
  }

  asio::awaitable<void> run_notification(jsonrpc::Notification note, const handlers::Router::NotificationFn* fn) {
    try {
      auto call = (*fn)(context, std::move(note.params));
      co_await std::move(call);
    } catch (...) {
      // Notifications are never answered, even on error (JSON-RPC §4.1).
      log::warn(note.method + " notification failed: " + handlers::to_rpc_error(std::current_exception()).message());
    }
    --in_flight;
    idle.notify_all();
  }

  // Returns true if a coroutine was started (the reader then yields so it starts in order).
  // Takes the frame's text and lets it go once parsed: a large prompt is held once as text while
  // parsing, then only as the parsed value, which is moved (never copied) on to its handler.
  asio::awaitable<bool> dispatch(std::string text) {
    boost::system::error_code ec;
    json::value frame = support::parse_json(text, ec);
    if (ec) {
      auto reply = reply_error({}, nullptr, jsonrpc::parse_error(support::valid_utf8(text) ? ec.message() : "invalid UTF-8"));
      co_await std::move(reply);
      co_return false;
    }
    std::string().swap(text);
    std::string frame_key = stream_key_of_frame(frame);
    jsonrpc::Inbound inbound = jsonrpc::classify(std::move(frame));
    if (auto* rejected = std::get_if<jsonrpc::Rejected>(&inbound)) {
      // Answered as an invalid request, and it also ends a request of ours it may be answering.
      if (rejected->as_response) client_calls.complete(std::move(*rejected->as_response));
      auto reply = reply_error(std::move(frame_key), rejected->id, rejected->error);
      co_await std::move(reply);
      co_return false;
    }
    if (auto* response = std::get_if<jsonrpc::Response>(&inbound)) {
      // Never answered, matched or not: answering a stray response could start an endless exchange.
      client_calls.complete(std::move(*response));
      co_return false;
    }
    if (auto* note = std::get_if<jsonrpc::Notification>(&inbound)) {
      if (note->method == kCancelRequest) {
        cancel_request(note->params);
        co_return false;
      }
      const auto* fn = router.find_notification(note->method);
      if (!fn || !initialized) {
        log::debug("ignoring notification " + note->method);
        co_return false;
      }
      ++in_flight;
      asio::co_spawn(executor, run_notification(std::move(*note), fn), asio::detached);
      co_return true;
    }
    auto& request = std::get<jsonrpc::Request>(inbound);
    if (!initialized && request.method != methods::initialize) {
      auto reply = reply_error(stream_key(request.params), request.id, jsonrpc::not_initialized());
      co_await std::move(reply);
      co_return false;
    }
    const auto* fn = router.find_request(request.method);
    if (!fn) {
      auto reply = reply_error(stream_key(request.params), request.id, jsonrpc::method_not_found(request.method));
      co_await std::move(reply);
      co_return false;
    }
    ++in_flight;
    std::shared_ptr<engine::Turn> turn;
    if (request.method == methods::session_prompt) {
      turn = std::make_shared<engine::Turn>(executor);
      running_prompts[support::to_json_text(jsonrpc::id_to_json(request.id))] = turn;
    }
    asio::co_spawn(executor, run_request(std::move(request), fn, std::move(turn)), asio::detached);
    co_return true;
  }

  // `$/cancel_request {requestId}` cancels the session/prompt it names, running or waiting in line,
  // and no other (session/cancel ends them all); any other request it names is left to finish.
  void cancel_request(const json::value& params) {
    const auto* o = params.if_object();
    const auto* id = o ? o->if_contains("requestId") : nullptr;
    if (!id) return;
    auto it = running_prompts.find(support::to_json_text(*id));
    if (it == running_prompts.end()) {
      log::debug("$/cancel_request for " + support::to_json_text(*id) + ": no running prompt");
      return;
    }
    it->second->cancel();
  }

  asio::awaitable<void> handle_events(std::vector<transport::FramerEvent>& events) {
    for (auto& event : events) {
      if (stopping) break;
      // Backpressure: no new request while the outbox is full (released by the shutdown's abort).
      co_await outbox.ready();
      if (stopping) break;
      if (auto* over = std::get_if<transport::Oversize>(&event)) {
        log::warn("dropped an input frame of " + std::to_string(over->bytes) + " bytes (limit " +
                  std::to_string(max_frame_bytes) + ")");
        auto reply = reply_error({}, nullptr, jsonrpc::oversize_frame(static_cast<std::uint64_t>(max_frame_bytes)));
        co_await std::move(reply);
        continue;
      }
      bool started = co_await dispatch(std::move(std::get<transport::Frame>(event).text));
      if (started) co_await asio::post(executor, asio::use_awaitable);
    }
    events.clear();
  }

  asio::awaitable<void> read_loop() {
    // Not zero-filled: zeroing 64 KiB faults in 16 pages before the first frame (~8 us each on this
    // project's virtual machines); a read touches only the pages it fills.
    constexpr std::size_t kReadBytes = 1 << 16;
    auto buffer = std::make_unique_for_overwrite<char[]>(kReadBytes);
    std::vector<transport::FramerEvent> events;
    while (!stopping) {
      co_await outbox.ready();  // stop reading while the client is behind
      if (stopping) break;
      std::span<char> space(buffer.get(), kReadBytes);
      transport::ReadResult r = co_await transport.read_some(space);
      if (r.bytes > 0) {
        framer.feed(std::string_view(buffer.get(), r.bytes), events);
        co_await handle_events(events);
      }
      if (r.error) {
        if (r.error != asio::error::eof && r.error != asio::error::operation_aborted)
          log::warn("input read failed: " + r.error.message());
        break;
      }
    }
    if (stopping) co_return;
    // End of input: the frames read so far are still served, within the grace period.
    arm_deadline();
    framer.finish(events);
    co_await handle_events(events);
  }

  asio::awaitable<void> settle(const std::function<bool()>& done) {
    while (!done()) co_await idle.wait();
  }

  asio::awaitable<void> shutdown() {
    arm_deadline();
    // No answer can arrive once input has ended.
    client_calls.close("the client closed its input");
    if (!stopping) log::info("input closed; cancelling " + std::to_string(engine.running_turns()) + " running turn(s)");
    // A prompt dispatched just before may register its turn later: cancel again on every wake-up.
    // (Named predicates: GCC 12 mishandles temporaries of closure type across co_await.)
    const std::function<bool()> requests_done = [this] {
      engine.cancel_all();
      return in_flight == 0;
    };
    const std::function<bool()> writer_done = [this] { return !writer_running; };
    const std::function<bool()> children_done = [this] { return children == 0; };
    co_await settle(requests_done);
    // The sessions' MCP servers end before we do (their starts were given up by cancel_all).
    co_await engine.stop_mcp_servers();
    outbox.close();
    co_await settle(writer_done);
    // Ends the grace timer and the watchers.
    deadline.cancel();
    transport.cancel_read();
    transport.cancel_write();
    co_await settle(children_done);
  }
};

Connection::Connection(asio::any_io_executor executor, asio::any_io_executor blocking, transport::Transport& transport,
                       const support::Config& config, llm::Provider& provider, engine::StoreHandle& store,
                       const refs::SessionReferenceService& references, std::string system_prompt_template)
    : impl_(std::make_unique<Impl>(std::move(executor), std::move(blocking), transport, config, provider, store,
                                   references, std::move(system_prompt_template))) {}

Connection::~Connection() = default;

asio::awaitable<void> Connection::run() {
  auto& s = *impl_;
  s.spawn_child(s.outbox.run(), &s.writer_running);
  s.spawn_child(s.watch_output());
  s.spawn_child(s.watch_input());
  co_await s.read_loop();
  co_await s.shutdown();
}

void Connection::set_provider_auth(handlers::ProviderAuth& auth) { impl_->context.auth = &auth; }

void Connection::stop() { impl_->stop("stop requested"); }

const transport::Outbox& Connection::outbox() const { return impl_->outbox; }

} // namespace acp::server
