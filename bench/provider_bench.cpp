// bench_provider: what the OpenAI-compatible provider adds between the model server and the sink.
//
// A scripted HTTP server runs on 127.0.0.1 in its own thread; the provider runs on the main thread's
// io_context, as it would on the connection strand. Figures (printed with what they include):
//  1. first-delta latency: server timestamp taken right before it writes the first SSE data event to
//     its socket → the sink receiving the decoded delta. Includes loopback TCP, the epoll wake-up,
//     Beast's chunk parsing, SSE framing, JSON decoding and the sink call; excludes connect, the request
//     and the server's time to first token. Median and p99 over many streams (one connection each).
//  2. relay throughput: one long stream of small content deltas, from the first delta to stream()
//     returning; deltas/s and MB/s of SSE body bytes, once with one event per HTTP chunk (what real
//     servers send) and once with many events per chunk (parser-bound).
// Usage: bench_provider [latency_runs] [throughput_deltas]
#include "scripted_server.hpp"

#include "llm/openai/openai_provider.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace acp::llm;
using namespace acp::llm::testing;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::string event(std::string_view text) { return sse_chunk_event("{\"content\":\"" + std::string(text) + "\"}"); }

OpenAiConfig config(const ScriptedServer& server) {
  OpenAiConfig c;
  c.provider = "openai";
  c.base_url = server.base_url();
  c.model = "bench";
  c.max_retries = 0;
  return c;
}

/// Runs one stream to completion on `ioc`; throws on provider failure.
void run(Provider& provider, net::io_context& ioc, const DeltaSink& sink) {
  Request req{{{Role::user, "bench"}}, "", Purpose::answer, std::nullopt};
  std::exception_ptr error;
  bool done = false;
  net::co_spawn(ioc, provider.stream(req, sink), [&](std::exception_ptr ep, Completion) {
    error = ep;
    done = true;
  });
  ioc.restart();
  while (!done)
    ioc.run_one();
  if (error)
    std::rethrow_exception(error);
}

void bench_latency(int runs) {
  std::atomic<Clock::rep> written_at{0};
  Script script = [&](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.sleep(2ms);  // let the client settle into its read, as during a real model's think time
    // Framed by hand so the timestamp is taken right before the one write that carries the event.
    std::string ev = event("x");
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", ev.size());
    std::string wire = size + ev + "\r\n";
    written_at.store(Clock::now().time_since_epoch().count());
    co_await c.write(wire);
    co_await c.chunk(sse_chunk_event("{}", "stop") + "data: [DONE]\n\n");
    co_await c.end_chunks();
  };
  ScriptedServer server(std::vector<Script>(static_cast<std::size_t>(runs) + 5, script));
  net::io_context ioc;
  auto provider = make_openai_provider(config(server), ioc.get_executor());
  std::vector<double> us;
  us.reserve(runs);
  for (int i = 0; i < runs + 5; ++i) {
    bool first = true;
    run(*provider, ioc, [&](const Delta&) {
      if (!first)
        return;
      first = false;
      auto now = Clock::now().time_since_epoch().count();
      if (i >= 5)  // the first streams warm up the allocator, resolver and code paths
        us.push_back(double(now - written_at.load()) / 1000.0);
    });
  }
  std::sort(us.begin(), us.end());
  std::printf("first-delta latency (server write of first SSE data event -> sink), %d streams over loopback:\n"
              "  median %.1f us, p90 %.1f us, p99 %.1f us, min %.1f us\n"
              "  includes: loopback TCP, epoll wake-up, HTTP chunk parsing (Beast), SSE framing, JSON decoding, sink "
              "call\n  excludes: connect, request write, server think time, the ACP host's frame write\n",
              runs, us[us.size() / 2], us[us.size() * 9 / 10], us[us.size() * 99 / 100], us.front());
}

void bench_throughput(int deltas, int events_per_chunk) {
  const std::string ev = event("0123456789abcdef0123456789abcdef0123456789abcdef");  // 48 bytes of content
  std::size_t body_bytes = 0;
  Script script = [&](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    std::string batch;
    for (int i = 0; i < events_per_chunk; ++i)
      batch += ev;
    for (int sent = 0; sent < deltas; sent += events_per_chunk)
      co_await c.chunk(batch);
    co_await c.chunk(sse_chunk_event("{}", "stop") + "data: [DONE]\n\n");
    co_await c.end_chunks();
  };
  ScriptedServer server({script});
  net::io_context ioc;
  auto provider = make_openai_provider(config(server), ioc.get_executor());
  std::size_t received = 0;
  Clock::time_point first;
  run(*provider, ioc, [&](const Delta& d) {
    if (received++ == 0)
      first = Clock::now();
    body_bytes += d.text.size();
  });
  auto secs = std::chrono::duration<double>(Clock::now() - first).count();
  std::size_t wire = received * ev.size();
  std::printf("relay throughput, %zu deltas of 48 bytes, %d event(s) per HTTP chunk:\n"
              "  %.0f deltas/s, %.1f MB/s of SSE body, %.1f MB/s of delta text (%.3f s)\n"
              "  includes: loopback TCP, Beast chunk parsing, SSE framing, JSON decoding, sink call; the server "
              "thread competes for the same cores\n",
              received, events_per_chunk, double(received) / secs, double(wire) / secs / 1e6,
              double(body_bytes) / secs / 1e6, secs);
}

} // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 500;
  int deltas = argc > 2 ? std::atoi(argv[2]) : 200000;
  bench_latency(runs);
  bench_throughput(deltas, 1);
  bench_throughput(deltas, 64);
  return 0;
}
