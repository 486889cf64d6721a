#include "server/connection.hpp"

#include "handlers/router.hpp"
#include "support/json_text.hpp"
#include "protocol/methods.hpp"
#include "support/log.hpp"
#include "support/utf8.hpp"
#include "transport/line_framer.hpp"
#include "transport/outbox.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace acp::server {

namespace asio = boost::asio;
namespace json = boost::json;

struct Connection::Impl {
  Impl(asio::any_io_executor ex, asio::any_io_executor blocking, int in_fd, int out_fd, const support::Config& config,
       llm::Provider& provider, handlers::StoreHandle& store, const refs::SessionReferenceService& references,
       std::string system_prompt)
      : executor(ex), input(ex, in_fd), outbox(ex, out_fd), idle(ex, asio::steady_timer::time_point::max()),
        framer(static_cast<std::size_t>(config.max_frame_bytes)), max_frame_bytes(config.max_frame_bytes),
        context{config, ex, blocking, provider, store, references, sessions,
                [this](const protocol::SessionNotification& n) {
                  outbox.send(jsonrpc::serialize_notification(methods::session_update, wire::encode(n)));
                },
                [this](std::vector<std::string> frames) {
                  asio::post(executor, [this, frames = std::move(frames)]() mutable {
                    for (auto& f : frames) outbox.send(std::move(f));
                  });
                },
                [this] { return outbox.queued_bytes(); },
                std::move(system_prompt)} {
    handlers::bind_all(router);
  }

  asio::any_io_executor executor;
  asio::posix::stream_descriptor input;
  transport::Outbox outbox;
  asio::steady_timer idle;  ///< woken whenever a request finishes (shutdown waits on it)
  transport::LineFramer framer;
  std::int64_t max_frame_bytes;
  handlers::SessionRegistry sessions;
  handlers::Router router;
  handlers::HandlerContext context;
  bool initialized = false;
  bool stopping = false;
  std::size_t in_flight = 0;

  void reply_error(const jsonrpc::RequestId& id, const jsonrpc::RpcError& error) {
    outbox.send(jsonrpc::serialize_error(id, error));
  }

  asio::awaitable<void> run_request(jsonrpc::Request request, const handlers::Router::RequestFn* fn) {
    json::value result;
    std::exception_ptr failure;
    try {
      result = co_await (*fn)(context, request.params);
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) {
      jsonrpc::RpcError error = handlers::to_rpc_error(failure);
      log::debug(request.method + " " + jsonrpc::id_to_string(request.id) + " failed: " + error.message());
      reply_error(request.id, error);
    } else {
      if (request.method == methods::initialize) initialized = true;
      outbox.send(jsonrpc::serialize_response(request.id, result));
    }
    --in_flight;
    idle.cancel();
  }

  asio::awaitable<void> run_notification(jsonrpc::Notification note, const handlers::Router::NotificationFn* fn) {
    try {
      co_await (*fn)(context, note.params);
    } catch (...) {
      // Notifications are never answered, even on error (JSON-RPC §4.1).
      log::warn(note.method + " notification failed: " + handlers::to_rpc_error(std::current_exception()).message());
    }
    --in_flight;
    idle.cancel();
  }

  // Returns true if a coroutine was started (the reader then yields so it starts in order).
  bool dispatch(std::string_view text) {
    boost::system::error_code ec;
    json::value frame = support::parse_json(text, ec);
    if (ec) {
      reply_error(nullptr, jsonrpc::parse_error(support::valid_utf8(text) ? ec.message() : "invalid UTF-8"));
      return false;
    }
    jsonrpc::Inbound inbound = jsonrpc::classify(frame);
    if (auto* rejected = std::get_if<jsonrpc::Rejected>(&inbound)) {
      reply_error(rejected->id, rejected->error);
      return false;
    }
    if (std::holds_alternative<jsonrpc::Response>(inbound)) {
      log::debug("ignoring a response frame: we send no requests");
      return false;
    }
    if (auto* note = std::get_if<jsonrpc::Notification>(&inbound)) {
      const auto* fn = router.find_notification(note->method);
      if (!fn || !initialized) {
        log::debug("ignoring notification " + note->method);
        return false;
      }
      ++in_flight;
      asio::co_spawn(executor, run_notification(std::move(*note), fn), asio::detached);
      return true;
    }
    auto& request = std::get<jsonrpc::Request>(inbound);
    if (!initialized && request.method != methods::initialize) {
      reply_error(request.id, jsonrpc::not_initialized());
      return false;
    }
    const auto* fn = router.find_request(request.method);
    if (!fn) {
      reply_error(request.id, jsonrpc::method_not_found(request.method));
      return false;
    }
    ++in_flight;
    asio::co_spawn(executor, run_request(std::move(request), fn), asio::detached);
    return true;
  }

  asio::awaitable<void> handle_events(std::vector<transport::FramerEvent>& events) {
    for (auto& event : events) {
      if (auto* over = std::get_if<transport::Oversize>(&event)) {
        log::warn("dropped an input frame of " + std::to_string(over->bytes) + " bytes (limit " +
                  std::to_string(max_frame_bytes) + ")");
        reply_error(nullptr, jsonrpc::oversize_frame(static_cast<std::uint64_t>(max_frame_bytes)));
        continue;
      }
      if (dispatch(std::get<transport::Frame>(event).text)) co_await asio::post(executor, asio::use_awaitable);
    }
    events.clear();
  }

  asio::awaitable<void> read_loop() {
    std::vector<char> buffer(1 << 16);
    std::vector<transport::FramerEvent> events;
    while (!stopping) {
      auto [ec, n] = co_await input.async_read_some(asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
      if (n > 0) {
        framer.feed(std::string_view(buffer.data(), n), events);
        co_await handle_events(events);
      }
      if (ec) {
        if (ec != asio::error::eof && ec != asio::error::operation_aborted)
          log::warn("input read failed: " + ec.message());
        break;
      }
    }
    framer.finish(events);
    co_await handle_events(events);
  }

  asio::awaitable<void> shutdown() {
    log::info("input closed; cancelling " + std::to_string(sessions.running_turns()) + " running turn(s)");
    sessions.cancel_all();
    while (in_flight > 0) {
      idle.expires_at(asio::steady_timer::time_point::max());
      co_await idle.async_wait(asio::as_tuple(asio::use_awaitable));
      sessions.cancel_all();
    }
    outbox.close();
  }
};

Connection::Connection(asio::any_io_executor executor, asio::any_io_executor blocking, int in_fd, int out_fd,
                       const support::Config& config, llm::Provider& provider, handlers::StoreHandle& store,
                       const refs::SessionReferenceService& references, std::string system_prompt_template)
    : impl_(std::make_unique<Impl>(std::move(executor), std::move(blocking), in_fd, out_fd, config, provider, store,
                                   references, std::move(system_prompt_template))) {}

Connection::~Connection() = default;

asio::awaitable<void> Connection::run() {
  auto& s = *impl_;
  asio::co_spawn(s.executor, s.outbox.run(), asio::detached);
  co_await s.read_loop();
  co_await s.shutdown();
  // The writer coroutine drains what is queued and ends; io_context::run() returns after it.
}

void Connection::set_provider_auth(handlers::ProviderAuth& auth) { impl_->context.auth = &auth; }

void Connection::stop() {
  impl_->stopping = true;
  boost::system::error_code ignored;
  impl_->input.cancel(ignored);
}

} // namespace acp::server
