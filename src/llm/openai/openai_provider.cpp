// The Beast/OpenSSL half of the provider: a connection (net/connect.hpp), one POST, incremental body
// reads, retries.
//
// One stream() call makes at most 1 + max_retries attempts (plus one merged-message retry), each on a
// fresh connection; connections are not pooled. Time limits use beast::tcp_stream's expiry, re-armed
// before every operation to min(idle deadline, overall deadline); the idle deadline moves only when an
// SSE data event arrives, so keep-alive comments cannot keep a stalled request alive. Cancellation is
// the awaiting coroutine's slot: Asio and Beast operations forward it, the pending read completes with
// operation_aborted, and the stream object is destroyed (socket closed, no TLS shutdown handshake).
// throw_if_cancelled is off so that every such point returns StopKind::cancelled instead of throwing.
#include "llm/openai/openai_provider.hpp"

#include "llm/openai/chat_request.hpp"
#include "llm/openai/chat_stream.hpp"
#include "llm/openai/endpoint.hpp"
#include "llm/openai/error_mapping.hpp"
#include "net/connect.hpp"
#include "net/sse_parser.hpp"
#include "support/provider_defaults.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <array>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <random>

namespace acp::llm {

using acp::net::SseItemKind;
using acp::net::SseParser;
using SseItem = acp::net::SseItem;

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);
constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;

/// Why an attempt failed and whether another attempt may help.
struct Failure {
  ProviderError error;
  bool retryable = false;
  std::optional<milliseconds> retry_after;
};

/// Exactly one of completion / failure is set.
struct Outcome {
  std::optional<Completion> completion;
  std::optional<Failure> failure;
};

Outcome fail(std::string code, std::string message, bool retryable, int status = 0) {
  return Outcome{std::nullopt, Failure{ProviderError(std::move(code), std::move(message), status), retryable, {}}};
}

/// What one attempt needs besides the connection.
struct AttemptInput {
  const std::string& body;
  const DeltaSink& sink;
  Clock::time_point deadline;
  bool& output_started;  ///< set as soon as one delta reached the sink; survives the attempt
};

/// One request and its response on one connection: what the steps of OpenAiProvider::exchange share.
template <class Stream>
struct Exchange {
  Exchange(Stream& stream, AttemptInput& in, net::cancellation_state cs, milliseconds idle)
      : stream(stream), in(in), cs(cs), idle(idle), idle_deadline(Clock::now() + idle) {}

  bool cancel_requested() const { return cs.cancelled() != net::cancellation_type::none; }
  /// Re-arms the stream's expiry; true when the overall deadline is the limit that fires there.
  bool arm() {
    beast::get_lowest_layer(stream).expires_at(std::min(idle_deadline, in.deadline));
    return in.deadline <= idle_deadline;
  }
  // Points the parser's body at `chunk`; after a read, body bytes = lent_bytes().
  // read_some (not read) returns as soon as some body arrived: an SSE event must not wait for a full buffer.
  void lend_chunk() {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
  }
  std::size_t lent_bytes() { return chunk.size() - parser.get().body().size; }

  Stream& stream;
  AttemptInput& in;
  net::cancellation_state cs;
  milliseconds idle;
  Clock::time_point idle_deadline;  ///< moves only when an SSE data event arrives (or the sink made us wait)
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  std::array<char, kReadChunk> chunk;
};

class OpenAiProvider final : public Provider {
public:
  OpenAiProvider(OpenAiConfig config, Endpoint endpoint, net::any_io_executor executor)
      : config_(std::move(config)), endpoint_(std::move(endpoint)), executor_(std::move(executor)) {}

  std::string name() const override { return config_.provider; }

  net::awaitable<Completion> stream(const Request& request, DeltaSink sink) override {
    // throw_if_cancelled belongs to the whole coroutine thread, i.e. also to the caller: restore it.
    const bool previous = co_await net::this_coro::throw_if_cancelled();
    co_await net::this_coro::throw_if_cancelled(false);
    std::exception_ptr error;
    Completion result;
    // Calls of tools that were not offered (a server's own) are not the caller's to run.
    // (The consumer's gate is kept: only the deltas are filtered.)
    if (request.tools.empty()) {
      auto inner = std::make_shared<DeltaSink>(std::move(sink));
      sink = DeltaSink([inner](const Delta& d) {
                         if (d.kind != DeltaKind::tool_call) (*inner)(d);
                       },
                       [inner] { return inner->room(); });
    }
    try {
      result = co_await stream_with_retries(request, sink);
      if (request.tools.empty()) result.tool_calls.clear();
    } catch (...) {
      error = std::current_exception();
    }
    co_await net::this_coro::throw_if_cancelled(previous);
    if (error)
      std::rethrow_exception(error);
    co_return result;
  }

private:
  net::awaitable<Completion> stream_with_retries(const Request& request, const DeltaSink& sink) {
    const auto cs = co_await net::this_coro::cancellation_state;
    auto cancel_requested = [&cs] { return cs.cancelled() != net::cancellation_type::none; };
    const auto deadline = Clock::now() + milliseconds(config_.request_timeout_ms);
    const std::string model = request.model.empty() ? config_.model : request.model;
    const Completion cancelled{StopKind::cancelled, std::nullopt, config_.provider, model};

    bool merged = merge_user_messages_.load(std::memory_order_relaxed);
    // (Not one ?: expression: that would copy request.messages.)
    auto build = [&] {
      if (merged)
        return build_chat_request_body(model, merge_consecutive_user_messages(request.messages), request.max_tokens,
                                       request.tools);
      return build_chat_request_body(model, request.messages, request.max_tokens, request.tools);
    };
    std::string body = build();
    bool output_started = false;
    int retries = 0;
    for (;;) {
      if (cancel_requested())
        co_return cancelled;
      Outcome outcome = co_await attempt(AttemptInput{body, sink, deadline, output_started}, model);
      if (outcome.completion)
        co_return std::move(*outcome.completion);
      Failure& f = *outcome.failure;
      if (output_started)
        throw ProviderError(f.error.code(), f.error.what(), f.error.http_status(), true);
      // docs/decisions.md#references-on-the-wire: some servers refuse two user messages in a row; merge once and
      // remember it.
      if (f.error.http_status() == 400 && !merged && names_consecutive_messages(f.error.what()) &&
          has_consecutive_user_messages(request.messages)) {
        merge_user_messages_.store(true, std::memory_order_relaxed);
        merged = true;
        body = build();
        continue;
      }
      if (!f.retryable || retries >= config_.max_retries)
        throw f.error;
      auto delay = backoff_delay(retries, config_.retry_base_ms, f.retry_after, rng());
      if (Clock::now() + delay >= deadline)
        throw f.error;  // waiting would overrun the overall deadline: report the real cause now
      ++retries;
      net::steady_timer timer(executor_, delay);
      co_await timer.async_wait(use_tuple);
      if (cancel_requested())
        co_return cancelled;
    }
  }

  static std::mt19937_64& rng() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return generator;
  }

  /// The TLS client context, created on first use (start-up time matters; docs/decisions.md#benchmarks).
  ssl::context& tls_context() {
    std::lock_guard lock(tls_mutex_);
    if (!tls_) {
      try {
        tls_ = acp::net::make_tls_context(config_.ca_file);
      } catch (const std::runtime_error& e) {
        throw ProviderError("PROVIDER_NETWORK", e.what());
      }
    }
    return *tls_;
  }

  std::string where() const { return endpoint_.host_header; }

  Outcome timeout(bool overall, std::string_view waiting_for) const {
    if (overall)
      return fail("PROVIDER_TIMEOUT",
                  "the request exceeded the overall limit of " + std::to_string(config_.request_timeout_ms) + " ms",
                  false);
    return fail("PROVIDER_TIMEOUT",
                "no data from " + where() + " for " + std::to_string(config_.idle_timeout_ms) + " ms while " +
                    std::string(waiting_for),
                false);
  }

  net::awaitable<Outcome> attempt(AttemptInput in, const std::string& model) {
    const Completion cancelled{StopKind::cancelled, std::nullopt, config_.provider, model};
    const auto connect_deadline = std::min(Clock::now() + milliseconds(config_.connect_timeout_ms), in.deadline);
    const bool connect_overall = in.deadline <= connect_deadline;
    ssl::context* ctx = nullptr;
    if (endpoint_.tls) {
      try {
        ctx = &tls_context();
      } catch (const ProviderError& e) {
        co_return Outcome{std::nullopt, Failure{e, false, {}}};
      }
    }
    acp::net::Connection connection = co_await acp::net::connect(executor_, endpoint_, connect_deadline, ctx);
    if (connection.failure) {
      using acp::net::ConnectFailureKind;
      using acp::net::ConnectStage;
      const acp::net::ConnectFailure& f = *connection.failure;
      const std::string words = acp::net::describe(f, endpoint_);
      switch (f.kind) {
      case ConnectFailureKind::cancelled:
        co_return Outcome{cancelled, {}};
      case ConnectFailureKind::certificate:  // a wrong certificate does not become right by retrying
        co_return fail("PROVIDER_NETWORK", words, false);
      case ConnectFailureKind::timeout:
        if (connect_overall)
          co_return timeout(true, f.stage == ConnectStage::resolve   ? "resolving the host"
                                  : f.stage == ConnectStage::connect ? "connecting"
                                                                     : "in the TLS handshake");
        if (f.stage == ConnectStage::connect)
          co_return fail("PROVIDER_TIMEOUT",
                         words + " after " + std::to_string(config_.connect_timeout_ms) + " ms", true);
        co_return fail("PROVIDER_TIMEOUT", words, true);
      case ConnectFailureKind::failed:
        break;
      }
      co_return fail("PROVIDER_NETWORK", words, true);
    }
    if (auto* tls = std::get_if<acp::net::TlsStream>(&connection.stream))
      co_return co_await exchange(*tls, in, model);
    co_return co_await exchange(std::get<acp::net::TcpStream>(connection.stream), in, model);
  }

  /// The POST of the request body. The body is a view of in.body (kept for retries), not a copy:
  /// requests may be tens of megabytes.
  http::request<http::span_body<char const>> make_request(const AttemptInput& in) const {
    http::request<http::span_body<char const>> req{http::verb::post, endpoint_.target, 11};
    req.set(http::field::host, endpoint_.host_header);
    req.set(http::field::user_agent, "dsh-acp");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    if (!config_.api_key.empty())
      req.set(http::field::authorization, "Bearer " + config_.api_key);
    req.body() = {in.body.data(), in.body.size()};
    req.prepare_payload();
    return req;
  }

  template <class Stream>
  net::awaitable<Outcome> exchange(Stream& stream, AttemptInput in, const std::string& model) {
    const Completion cancelled{StopKind::cancelled, std::nullopt, config_.provider, model};
    const auto cs = co_await net::this_coro::cancellation_state;
    Exchange<Stream> x(stream, in, cs, milliseconds(config_.idle_timeout_ms));
    auto req = make_request(in);

    bool overall = x.arm();
    auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
    (void)written;
    if (x.cancel_requested())
      co_return Outcome{cancelled, {}};
    if (wec == beast::error::timeout)
      co_return timeout(overall, "sending the request");
    if (wec)
      co_return fail("PROVIDER_NETWORK", "sending the request to " + where() + " failed: " + wec.message(), true);

    x.parser.body_limit(boost::none);  // a long answer passes Beast's 8 MB default
    overall = x.arm();
    auto [hec, header_bytes] = co_await http::async_read_header(stream, x.buffer, x.parser, use_tuple);
    (void)header_bytes;
    if (x.cancel_requested())
      co_return Outcome{cancelled, {}};
    if (hec == beast::error::timeout)
      co_return timeout(overall, "waiting for the response");
    if (hec)
      co_return fail("PROVIDER_NETWORK", "reading the response from " + where() + " failed: " + hec.message(), true);

    const int status = x.parser.get().result_int();
    const auto content_type = x.parser.get()[http::field::content_type];
    // A server that ignores `stream: true` (or a proxy's HTML page) must not be parsed as SSE: it would
    // look like a cut stream and be retried. Treat it like an error response, without retries.
    const bool not_sse = status == 200 && !content_type.empty() &&
                         !beast::iequals(content_type.substr(0, content_type.find(';')), "text/event-stream");
    if (status != 200 || not_sse)
      co_return co_await read_refusal(x, not_sse, cancelled);
    co_return co_await read_events(x, model, cancelled);
  }

  /// The answer to an error status, or a 200 that is not an event stream: its body (up to
  /// kMaxErrorBody) says why.
  template <class Stream>
  net::awaitable<Outcome> read_refusal(Exchange<Stream>& x, bool not_sse, const Completion& cancelled) {
    const int status = x.parser.get().result_int();
    const auto content_type = x.parser.get()[http::field::content_type];
    std::string text;
    while (!x.parser.is_done() && text.size() < kMaxErrorBody) {
      x.arm();
      x.lend_chunk();
      auto [ec, unused] = co_await http::async_read_some(x.stream, x.buffer, x.parser, use_tuple);
      (void)unused;
      text.append(x.chunk.data(), x.lent_bytes());
      if (x.cancel_requested())
        co_return Outcome{cancelled, {}};
      if (ec && ec != http::error::need_buffer)
        break;  // the status alone still says what happened
    }
    if (not_sse) {
      auto message = extract_error_message(text);
      co_return fail("PROVIDER_UNAVAILABLE",
                     message.empty() ? "the provider answered " + std::string(content_type) +
                                           " instead of an event stream"
                                     : message,
                     false, status);
    }
    Failure f{map_http_error(status, x.parser.get().reason(), text), is_retryable_status(status), {}};
    if (auto it = x.parser.get().find(http::field::retry_after); it != x.parser.get().end())
      f.retry_after = parse_retry_after(it->value());
    co_return Outcome{std::nullopt, std::move(f)};
  }

  /// The event stream of a 200 answer, each delta handed to the sink as it is decoded.
  template <class Stream>
  net::awaitable<Outcome> read_events(Exchange<Stream>& x, const std::string& model, const Completion& cancelled) {
    AttemptInput& in = x.in;
    SseParser sse;
    ChatStreamDecoder decoder;
    std::vector<SseItem> items;
    std::vector<Delta> deltas;
    bool done = false;
    while (!done && !x.parser.is_done()) {
      // Back-pressure: read no more of the stream until the consumer took what it has (the server
      // waits on TCP meanwhile). The wait is ours, not the server's: it does not count as idle.
      if (in.output_started) {
        const auto waiting_since = Clock::now();
        co_await in.sink.room();
        if (x.cancel_requested())
          co_return Outcome{cancelled, {}};
        x.idle_deadline += Clock::now() - waiting_since;
      }
      const bool overall = x.arm();
      x.lend_chunk();
      auto [ec, unused] = co_await http::async_read_some(x.stream, x.buffer, x.parser, use_tuple);
      (void)unused;
      if (ec == http::error::need_buffer)
        ec = {};  // the chunk is full: not an error, just read again
      const std::size_t n = x.lent_bytes();
      if (x.cancel_requested())
        co_return Outcome{cancelled, {}};
      items.clear();
      try {
        sse.feed(std::string_view(x.chunk.data(), n), items);
        for (auto& item : items) {
          if (item.kind == SseItemKind::comment)
            continue;  // keep-alive: deliberately leaves idle_deadline alone
          if (item.kind == SseItemKind::done) {
            done = true;
            break;
          }
          x.idle_deadline = Clock::now() + x.idle;
          deltas.clear();
          decoder.on_data(item.data, deltas);
          for (const auto& d : deltas) {
            if (x.cancel_requested())
              co_return Outcome{cancelled, {}};  // cancelled from inside the sink: deliver nothing more
            in.output_started = true;
            in.sink(d);
          }
        }
      } catch (const ProviderError& e) {
        co_return Outcome{std::nullopt, Failure{e, false, {}}};
      } catch (const std::length_error& e) {
        co_return fail("PROVIDER_UNAVAILABLE", std::string("malformed stream from the provider: ") + e.what(), false,
                       200);
      }
      if (done)
        break;
      if (ec == beast::error::timeout)
        co_return timeout(overall, in.output_started ? "streaming the answer" : "waiting for the first event");
      if (ec)
        co_return fail("PROVIDER_NETWORK", "the connection to " + where() + " broke mid-stream: " + ec.message(),
                       true);
    }
    if (!done && !decoder.stop())
      co_return fail("PROVIDER_NETWORK", "the stream from " + where() + " ended before the answer was complete", true);
    co_return Outcome{Completion{decoder.stop().value_or(StopKind::end_turn), decoder.usage(), config_.provider, model,
                                 decoder.tool_calls()},
                      {}};
  }

  OpenAiConfig config_;
  Endpoint endpoint_;
  net::any_io_executor executor_;
  std::mutex tls_mutex_;
  std::unique_ptr<ssl::context> tls_;
  std::atomic<bool> merge_user_messages_{false};
};

void validate(const OpenAiConfig& c) {
  if (c.provider != "deepseek" && c.provider != "openai")
    throw ConfigError("unknown provider '" + c.provider + "' (expected deepseek or openai)");
  if (c.base_url.empty())
    throw ConfigError("the openai provider needs a base URL");
  for (char ch : c.api_key)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw ConfigError("the API key contains control characters");
  if (c.connect_timeout_ms <= 0 || c.idle_timeout_ms <= 0 || c.request_timeout_ms <= 0)
    throw ConfigError("provider timeouts must be positive");
  if (c.max_retries < 0 || c.retry_base_ms < 0)
    throw ConfigError("provider retry settings must not be negative");
  if (!c.ca_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(c.ca_file, ec))
      throw ConfigError("CA file not found: " + c.ca_file);
  }
}

} // namespace

std::unique_ptr<Provider> make_openai_provider(const OpenAiConfig& config, net::any_io_executor executor) {
  OpenAiConfig c = config;
  if (c.provider == "deepseek") {
    if (c.base_url.empty())
      c.base_url = support::kDeepSeekBaseUrl;
    if (c.model.empty())
      c.model = support::kDeepSeekDefaultModel;
  }
  validate(c);
  Endpoint ep = parse_base_url(c.base_url);
  if (!ep.tls && !c.allow_insecure_http && !is_loopback_host(ep.host))
    throw ConfigError("refusing plain http:// to " + ep.host +
                      ": the API key and conversation would travel unencrypted (use https:// or allow insecure http)");
  return std::make_unique<OpenAiProvider>(std::move(c), std::move(ep), std::move(executor));
}

} // namespace acp::llm
