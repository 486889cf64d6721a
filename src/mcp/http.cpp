// MCP over HTTP. The streamable HTTP transport (protocol 2025-03-26 and later): every message is a
// POST of its own to the server's one URL, answered with JSON, with an SSE stream carrying the answer
// (and whatever the server says meanwhile), or with 202 for a notification; the session id the
// server gives in its initialize answer (Mcp-Session-Id) and the negotiated protocol version go
// with every later request, and a DELETE ends the session. The legacy HTTP+SSE transport (2024-11-05)
// for servers that offer only that: a GET opens an event stream whose first `endpoint` event names
// where to POST (same origin only: the session's headers go there); answers arrive on the stream.
//
// Each request has a connection of its own (net::connect) and a cancellation signal: a call
// withdrawn (the turn cancelled, its time limit passed) closes its request's connection before the
// server is told with notifications/cancelled. The bounds are stdio's: one answer, streamed or not,
// at most kMaxFrameBytes (the request is then abandoned and its call fails with an error saying so),
// kMaxWaiting requests in flight, the log bounds of State::log_line. Nothing blocks: every wait is
// a coroutine's on the connection's executor.
#include "mcp/peer.hpp"

#include "net/body_reader.hpp"
#include "net/connect.hpp"
#include "net/endpoint.hpp"
#include "net/sse_parser.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/ascii.hpp"
#include "support/event.hpp"
#include "support/json_text.hpp"
#include "support/utf8.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <list>

namespace acp::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
namespace http = boost::beast::http;

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kMaxErrorText = 1024;       // of an error answer's body, quoted in the error
constexpr std::size_t kMaxSessionIdBytes = 1024;  // Mcp-Session-Id: visible ASCII, and not a novel
constexpr std::chrono::milliseconds kDeleteLimit{2000};  // the session's DELETE at stop

// One context for every MCP server over https (the system's CAs), made by the first one.
asio::ssl::context& tls_context() {
  static const std::unique_ptr<asio::ssl::context> context = net::make_tls_context();
  return *context;
}

std::string media_type(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return support::ascii_lower(type);
}

std::optional<std::int64_t> request_id(std::string_view frame) {
  boost::system::error_code ec;
  json::value v = support::parse_json(frame, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (!o || !o->contains("method")) return std::nullopt;
  const json::value* id = o->if_contains("id");
  return id && id->is_int64() ? std::optional<std::int64_t>(id->get_int64()) : std::nullopt;
}

// Text of the server's (a header, a URL it named) fit for an error message: valid UTF-8, one line, short.
std::string printable(std::string_view text, std::size_t limit = 200) {
  std::string out(text.substr(0, limit));
  support::replace_invalid_utf8(out);
  out.resize(support::utf8_floor(out, std::min(out.size(), limit)));
  std::replace_if(out.begin(), out.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }, ' ');
  return out;
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

struct HttpState final : Server::State {
  HttpState(asio::any_io_executor ex, ServerSpec s, net::Endpoint ep)
      : State(ex, std::move(s)), endpoint(std::move(ep)), legacy(spec.transport == Transport::sse), changed(ex) {}

  struct Flight {
    asio::cancellation_signal cancel;
    std::optional<std::int64_t> id;  ///< the request's, when it is one of ours
  };

  net::Endpoint endpoint;
  bool legacy;
  std::optional<net::Endpoint> post_to;  ///< where messages go (legacy: once its endpoint event came)
  std::string session_id;                ///< Mcp-Session-Id, once the server gave one
  std::list<std::shared_ptr<Flight>> flights;  ///< requests in flight, and the legacy event stream
  support::Event changed;                ///< a flight ended, the endpoint came, the server failed
  bool stopped = false;

  std::shared_ptr<HttpState> self() { return std::static_pointer_cast<HttpState>(shared_from_this()); }

  void launch(asio::awaitable<void> task, std::shared_ptr<Flight> flight) {
    flights.push_back(flight);
    asio::co_spawn(executor, std::move(task),
                   asio::bind_cancellation_slot(flight->cancel.slot(), [keep = self(), flight](std::exception_ptr e) {
                     if (e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                         keep->log_line(log::Level::warn, std::string("a request to it failed: ") + x.what());
                       }
                     }
                     keep->flights.remove(flight);
                     keep->changed.notify_all();
                   }));
  }

  void cancel_all() {
    auto all = flights;  // emitting may end a flight
    for (auto& f : all) f->cancel.emit(asio::cancellation_type::terminal);
  }

  void send(std::string frame) override {
    if (!running) return;
    if (flights.size() >= 2 * kMaxWaiting) {
      fail("could not keep up with our requests");
      return;
    }
    auto flight = std::make_shared<Flight>();
    flight->id = request_id(frame);
    launch(post(std::move(frame), flight), flight);
  }

  void withdrawn(std::int64_t id) override {
    auto all = flights;
    for (auto& f : all)
      if (f->id == id) f->cancel.emit(asio::cancellation_type::terminal);
  }

  void on_failed() override {
    cancel_all();
    changed.notify_all();
  }

  void abandon() override {
    if (stopped) return;
    stopped = true;
    running = false;
    calls.close("MCP server \"" + spec.name + "\" was stopped");
    cancel_all();
  }

  // A request that went wrong. Before the server is initialised, or when it cannot be reached, the
  // server is unusable; later, the one call fails (the model reads why) and the server stays.
  void request_failed(std::optional<std::int64_t> id, const std::string& what, bool server_gone = false) {
    if (!running) return;
    if (server_gone || version.empty()) return fail(what);
    if (!id) return log_line(log::Level::warn, what);
    jsonrpc::Response r;
    r.number = *id;
    r.id = std::to_string(*id);
    r.error = jsonrpc::RpcError(jsonrpc::code::internal_error, describe(what));
    calls.complete(std::move(r));
  }

  template <class Request>
  void set_headers(Request& req, const net::Endpoint& to) {
    // The client's headers as given (handlers/mcp_servers.cpp refused CR, LF and bad names), then
    // the ones the protocol needs, which replace any of the same name.
    for (const auto& [name, value] : spec.headers) req.insert(name, value);
    req.set(http::field::host, to.host_header);
    if (req.find(http::field::user_agent) == req.end()) req.set(http::field::user_agent, "dsh-acp");
    if (!legacy && !session_id.empty()) req.set("Mcp-Session-Id", session_id);
    if (!legacy && !version.empty()) req.set("MCP-Protocol-Version", version);
  }

  void take_session_id(const http::fields& fields) {
    if (legacy || !session_id.empty()) return;
    auto it = fields.find("Mcp-Session-Id");
    if (it == fields.end()) return;
    std::string_view id = it->value();
    bool visible = std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
    if (id.empty() || id.size() > kMaxSessionIdBytes || !visible) return fail("sent an invalid Mcp-Session-Id");
    session_id = std::string(id);
  }

  // Up to kMaxErrorText of an error answer's body, as one line of valid UTF-8.
  template <class Stream, class Reader>
  asio::awaitable<std::string> error_text(Stream& stream, Reader& reader) {
    std::string text;
    while (!reader.done() && text.size() < kMaxErrorText) {
      auto [piece, ec] = co_await reader.next(stream);
      text.append(piece);
      if (ec) break;
    }
    co_return printable(text, kMaxErrorText);
  }

  template <class Stream>
  asio::awaitable<void> exchange(Stream& stream, const net::Endpoint& to, const std::string& frame,
                                 std::optional<std::int64_t> id) {
    const auto cs = co_await asio::this_coro::cancellation_state;
    auto cancelled = [&cs] { return cs.cancelled() != asio::cancellation_type::none; };
    http::request<http::span_body<const char>> req{http::verb::post, to.target, 11};
    set_headers(req, to);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json, text/event-stream");
    req.body() = {frame.data(), frame.size()};
    req.prepare_payload();
    auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
    (void)written;
    if (cancelled()) co_return;
    if (wec) co_return request_failed(id, "did not take a request at " + spec.url + ": " + wec.message());

    net::BodyReader<> reader;
    auto [hec, header_bytes] = co_await http::async_read_header(stream, reader.buffer(), reader.parser(), use_tuple);
    (void)header_bytes;
    if (cancelled()) co_return;
    if (hec) co_return request_failed(id, "did not answer a request at " + spec.url + ": " + hec.message());
    const auto& res = reader.parser().get();
    const int status = res.result_int();
    take_session_id(res);
    if (legacy && status / 100 == 2) co_return;  // the answer comes on the event stream
    if (status == 202) {
      if (id) request_failed(id, "accepted a request without answering it (HTTP 202)");
      co_return;
    }
    if (status == 404 && !session_id.empty()) co_return request_failed(id, "ended our session (HTTP 404)", true);
    if (status != 200) {
      std::string text = co_await error_text(stream, reader);
      if (cancelled()) co_return;
      co_return request_failed(id, "answered HTTP " + std::to_string(status) + (text.empty() ? "" : ": " + text));
    }
    const std::string type = media_type(res[http::field::content_type]);
    const std::string too_big = "sent more than " + mib(kMaxFrameBytes) + " in answer to one request";
    if (type == "application/json") {
      std::string body;
      while (!reader.done()) {
        auto [piece, ec] = co_await reader.next(stream);
        if (cancelled()) co_return;
        bytes_read += piece.size();
        if (body.size() + piece.size() > kMaxFrameBytes) co_return request_failed(id, too_big);
        body.append(piece);
        if (ec) co_return request_failed(id, "broke off its answer: " + ec.message());
      }
      auto answered = on_frame(std::move(body));
      if (id && answered != id) request_failed(id, "answered a request with another message");
      co_return;
    }
    if (type != "text/event-stream")
      co_return request_failed(id, "answered with Content-Type \"" + printable(type) + "\", not JSON or an event stream");
    net::SseParser sse(kMaxFrameBytes);
    std::vector<net::SseItem> items;
    std::size_t total = 0;
    while (!reader.done()) {
      auto [piece, ec] = co_await reader.next(stream);
      if (cancelled()) co_return;
      bytes_read += piece.size();
      total += piece.size();
      // Everything counts, comments too: a stream that never ends is cut off.
      if (total > kMaxFrameBytes) co_return request_failed(id, too_big);
      items.clear();
      try {
        sse.feed(piece, items);
      } catch (const std::length_error&) {
        co_return request_failed(id, too_big);
      }
      for (auto& item : items) {
        if (item.kind != net::SseItemKind::event || item.data.empty() || (!item.event.empty() && item.event != "message"))
          continue;  // comments, other events, and priming events (an id with no data)
        // Its answer ends what this request waits for; the rest of the stream is not read.
        if (auto answered = on_frame(std::move(item.data)); id && answered == id) co_return;
      }
      if (!running) co_return;
      if (ec) co_return request_failed(id, "broke off its event stream: " + ec.message());
    }
    if (id) request_failed(id, "ended its event stream without answering");
  }

  asio::awaitable<void> post(std::string frame_in, std::shared_ptr<Flight> flight_in) {
    const std::string frame = std::move(frame_in);
    const std::shared_ptr<Flight> flight = std::move(flight_in);
    co_await asio::this_coro::throw_if_cancelled(false);
    if (!post_to) co_return request_failed(flight->id, "has no endpoint to send to");
    const net::Endpoint to = *post_to;
    net::Connection c =
        co_await net::connect(executor, to, Clock::now() + spec.start_timeout, to.tls ? &tls_context() : nullptr);
    if (c.failure) {
      if (c.failure->kind != net::ConnectFailureKind::cancelled)
        request_failed(flight->id, "could not be reached at " + spec.url + ": " + net::describe(*c.failure, to), true);
      co_return;
    }
    // A request waits as long as its call may (the call's limit withdraws it); anything else, and
    // every legacy POST (answered on the stream), gets the start limit.
    if (flight->id && !legacy) c.lowest().expires_never();
    else c.lowest().expires_after(spec.start_timeout);
    if (auto* tls = std::get_if<net::TlsStream>(&c.stream)) co_await exchange(*tls, to, frame, flight->id);
    else co_await exchange(std::get<net::TcpStream>(c.stream), to, frame, flight->id);
  }

  // The legacy transport's event stream: its endpoint, then every message of the server.
  template <class Stream>
  asio::awaitable<void> listen_on(Stream& stream) {
    const auto cs = co_await asio::this_coro::cancellation_state;
    auto cancelled = [&cs] { return cs.cancelled() != asio::cancellation_type::none; };
    http::request<http::empty_body> req{http::verb::get, endpoint.target, 11};
    set_headers(req, endpoint);
    req.set(http::field::accept, "text/event-stream");
    auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
    (void)written;
    if (cancelled()) co_return;
    if (wec) co_return fail("did not take the event stream's request at " + spec.url + ": " + wec.message());
    net::BodyReader<> reader;
    auto [hec, header_bytes] = co_await http::async_read_header(stream, reader.buffer(), reader.parser(), use_tuple);
    (void)header_bytes;
    if (cancelled()) co_return;
    if (hec) co_return fail("did not open an event stream at " + spec.url + ": " + hec.message());
    const auto& res = reader.parser().get();
    if (res.result_int() != 200) {
      std::string text = co_await error_text(stream, reader);
      if (cancelled()) co_return;
      co_return fail("answered the event stream's GET at " + spec.url + " with HTTP " + std::to_string(res.result_int()) +
                     (text.empty() ? "" : ": " + text));
    }
    if (media_type(res[http::field::content_type]) != "text/event-stream")
      co_return fail("answered the GET at " + spec.url + " with something else than an event stream");
    net::SseParser sse(kMaxFrameBytes);
    std::vector<net::SseItem> items;
    while (!reader.done()) {
      auto [piece, ec] = co_await reader.next(stream);
      if (cancelled()) co_return;
      bytes_read += piece.size();
      items.clear();
      try {
        sse.feed(piece, items);
      } catch (const std::length_error&) {
        co_return fail("sent an event larger than " + mib(kMaxFrameBytes));
      }
      for (auto& item : items) {
        if (item.kind != net::SseItemKind::event) continue;
        if (item.event == "endpoint") {
          if (!post_to) take_endpoint(item.data);
        } else if (!item.data.empty() && (item.event.empty() || item.event == "message")) {
          on_frame(std::move(item.data));
        }
      }
      if (!running) co_return;
      if (ec) break;
    }
    fail("closed its event stream");
  }

  void take_endpoint(std::string_view reference) {
    try {
      std::string url = net::resolve_url(spec.url, reference);
      net::Endpoint to = net::parse_http_url(url);
      if (!net::same_origin(to, endpoint)) return fail("named an endpoint elsewhere (" + printable(url) + "); it is not used");
      post_to = std::move(to);
      changed.notify_all();
    } catch (const net::BadUrl& e) {
      fail("named an endpoint that cannot be used: " + printable(e.what()));
    }
  }

  asio::awaitable<void> listen(std::shared_ptr<Flight>) {
    co_await asio::this_coro::throw_if_cancelled(false);
    net::Connection c = co_await net::connect(executor, endpoint, Clock::now() + spec.start_timeout,
                                              endpoint.tls ? &tls_context() : nullptr);
    if (c.failure) {
      if (c.failure->kind != net::ConnectFailureKind::cancelled)
        fail("could not be reached at " + spec.url + ": " + net::describe(*c.failure, endpoint));
      co_return;
    }
    c.lowest().expires_never();
    if (auto* tls = std::get_if<net::TlsStream>(&c.stream)) co_await listen_on(*tls);
    else co_await listen_on(std::get<net::TcpStream>(c.stream));
  }

  asio::awaitable<void> open() override {
    if (!legacy) {
      post_to = endpoint;
      co_return;
    }
    auto flight = std::make_shared<Flight>();
    launch(listen(flight), flight);
    while (running && !post_to)
      if (!co_await changed.wait()) throw ServerFailure(describe("was given up while opening its event stream"));
    if (!post_to) throw ServerFailure(failure);
  }

  template <class Stream>
  asio::awaitable<void> delete_on(Stream& stream) {
    http::request<http::empty_body> req{http::verb::delete_, endpoint.target, 11};
    set_headers(req, endpoint);
    auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
    (void)written;
    if (wec) co_return;
    net::BodyReader<> reader;
    co_await http::async_read_header(stream, reader.buffer(), reader.parser(), use_tuple);
  }

  // Tells the server the session is over; its answer (405 included: deleting is optional) is not
  // awaited past kDeleteLimit.
  asio::awaitable<void> end_session() {
    net::Connection c = co_await net::connect(executor, endpoint, Clock::now() + kDeleteLimit,
                                              endpoint.tls ? &tls_context() : nullptr);
    if (c.failure) co_return;
    c.lowest().expires_after(kDeleteLimit);
    if (auto* tls = std::get_if<net::TlsStream>(&c.stream)) co_await delete_on(*tls);
    else co_await delete_on(std::get<net::TcpStream>(c.stream));
  }

  asio::awaitable<void> stop() override {
    auto keep = self();
    // Cancellation of the caller must not cut the stop short: what it started is awaited.
    co_await asio::this_coro::reset_cancellation_state();
    co_await asio::this_coro::throw_if_cancelled(false);
    const bool first = !stopped;
    stopped = true;
    running = false;
    if (failure.empty()) failure = "MCP server \"" + spec.name + "\" was stopped";
    calls.close(failure);
    cancel_all();
    while (!flights.empty()) co_await changed.wait();
    if (first && !legacy && !session_id.empty()) co_await end_session();
  }
};

} // namespace

std::string url_problem(std::string_view url) {
  try {
    net::parse_http_url(url);
    return {};
  } catch (const net::BadUrl& e) {
    return e.what();
  }
}

std::shared_ptr<Server::State> make_http(asio::any_io_executor executor, ServerSpec spec) {
  net::Endpoint endpoint;
  try {
    endpoint = net::parse_http_url(spec.url);
  } catch (const net::BadUrl& e) {
    throw ServerFailure("MCP server \"" + spec.name + "\" cannot be used: " + e.what());
  }
  return std::make_shared<HttpState>(std::move(executor), std::move(spec), std::move(endpoint));
}

} // namespace acp::mcp
