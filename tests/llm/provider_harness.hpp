// Test harness: runs one Provider::stream() on a client io_context and collects what happened.
#pragma once

#include "llm/openai/openai_provider.hpp"
#include "scripted_server.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace acp::llm::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct RunResult {
  std::optional<Completion> completion;
  std::optional<ProviderError> error;
  std::vector<Delta> deltas;
  milliseconds elapsed{0};
  std::optional<Clock::time_point> cancel_emitted;
  Clock::time_point finished;
  std::size_t rooms = 0;  ///< times the provider awaited the sink's room()

  std::string text(DeltaKind kind = DeltaKind::text) const {
    std::string s;
    for (const auto& d : deltas)
      if (d.kind == kind)
        s += d.text;
    return s;
  }
};

struct RunOptions {
  /// Emit terminal cancellation this long after the first delta (while a read is pending).
  std::optional<milliseconds> cancel_after_first_delta;
  /// The delta (1-based) whose arrival starts cancel_after_first_delta's wait.
  std::size_t cancel_armed_at = 1;
  /// Emit terminal cancellation this long after the start.
  std::optional<milliseconds> cancel_after_start;
  /// Emit terminal cancellation from inside the sink when it receives this delta (1-based): no operation
  /// is pending then, so the provider must notice the cancellation state by itself.
  std::optional<std::size_t> cancel_in_sink_at;
};

inline RunResult run_stream(Provider& provider, boost::asio::io_context& ioc, const Request& request,
                            RunOptions options = {}) {
  namespace net = boost::asio;
  RunResult r;
  net::cancellation_signal signal;
  net::steady_timer cancel_timer(ioc);
  auto arm_cancel = [&](milliseconds after) {
    cancel_timer.expires_after(after);
    cancel_timer.async_wait([&](boost::system::error_code ec) {
      if (ec)
        return;
      r.cancel_emitted = Clock::now();
      signal.emit(net::cancellation_type::terminal);
    });
  };
  auto sink = [&](const Delta& d) {
    r.deltas.push_back(d);
    if (r.deltas.size() == options.cancel_armed_at && options.cancel_after_first_delta)
      arm_cancel(*options.cancel_after_first_delta);
    if (options.cancel_in_sink_at && r.deltas.size() == *options.cancel_in_sink_at) {
      r.cancel_emitted = Clock::now();
      signal.emit(net::cancellation_type::terminal);
    }
  };
  bool done = false;
  auto start = Clock::now();
  if (options.cancel_after_start)
    arm_cancel(*options.cancel_after_start);
  // The consumer's gate: counted, and open at once.
  DeltaSink gated(sink, [&r]() -> net::awaitable<void> {
    ++r.rooms;
    co_return;
  });
  net::co_spawn(ioc, provider.stream(request, gated),
                net::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr ep, Completion c) {
                  r.finished = Clock::now();
                  done = true;
                  cancel_timer.cancel();
                  if (!ep) {
                    r.completion = std::move(c);
                    return;
                  }
                  try {
                    std::rethrow_exception(ep);
                  } catch (const ProviderError& e) {
                    r.error = e;
                  }
                }));
  ioc.restart();
  while (!done && Clock::now() - start < std::chrono::seconds(60))
    ioc.run_for(milliseconds(100));
  r.elapsed = std::chrono::duration_cast<milliseconds>(r.finished - start);
  if (!done)
    throw std::runtime_error("stream() did not complete within 60 s");
  return r;
}

/// Milliseconds of a duration, as a plain number Boost.Test can print.
template <class Duration>
long long ms_count(Duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

inline OpenAiConfig test_config(const ScriptedServer& server) {
  OpenAiConfig c;
  c.provider = "openai";
  c.base_url = server.base_url();
  c.model = "test-model";
  c.connect_timeout_ms = 5000;
  c.idle_timeout_ms = 10000;
  c.request_timeout_ms = 30000;
  c.retry_base_ms = 10;
  return c;
}

inline Request simple_request() {
  return Request{{{Role::system, "sys"}, {Role::user, "hello"}}, "", Purpose::answer, std::nullopt};
}

} // namespace acp::llm::testing
