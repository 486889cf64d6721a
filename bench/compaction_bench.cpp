// bench_compaction: the "compaction" figure of docs/decisions.md#benchmarks.
//
// A stored session of N messages (default 10,000: N/2 prompt turns of a ~200-byte user message and
// a ~200-byte assistant answer, written straight through the store, not timed) is compacted with
// `/compact` through the session engine on the echo model, in a raw and a zstd store. Reported:
// the compaction's wall time excluding the model's own time (the echo provider is wrapped and its
// stream time subtracted): planning, the summariser request's assembly, the compact/start append
// and the fsynced summary/checkpoint/end batch; the log bytes it appended; and the size of the
// model request of a prompt right before and right after (UTF-8 bytes and estimated tokens; those
// two prompts are answered "ok" without echo). The minimum of --runs runs is the figure.
// Usage: bench_compaction [--messages N] [--runs R]
#include "engine/engine.hpp"
#include "handlers/store_source.hpp"
#include "llm/echo_provider.hpp"
#include "llm/token_estimate.hpp"
#include "refs/service.hpp"
#include "store/event_builders.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"
#include "support/config.hpp"

#include "bench_result.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace acp;
using Clock = std::chrono::steady_clock;

namespace {

// Echo writes the summary, timed: every summary stream's wall time is added to model_time. Answer
// requests (the prompts around the compaction) only have their size recorded and get "ok", so a
// kept turn does not carry echo's description of a 10,000-message request.
class TimedProvider final : public llm::Provider {
public:
  explicit TimedProvider(std::unique_ptr<llm::Provider> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  asio::awaitable<llm::Completion> stream(const llm::Request& request, llm::DeltaSink sink) override {
    if (request.purpose == llm::Purpose::answer) {
      last_bytes = 0;
      for (const auto& m : request.messages) last_bytes += m.text.size();
      last_tokens = llm::estimate_request_tokens(request.messages);
      sink(llm::Delta{llm::DeltaKind::text, "ok"});
      co_return llm::Completion{llm::StopKind::end_turn, std::nullopt, "echo", "echo"};
    }
    auto start = Clock::now();
    llm::Completion c = co_await inner_->stream(request, std::move(sink));
    model_time += Clock::now() - start;
    co_return c;
  }
  Clock::duration model_time{};
  std::size_t last_bytes = 0;
  std::int64_t last_tokens = 0;

private:
  std::unique_ptr<llm::Provider> inner_;
};

struct Silent final : engine::TurnObserver {
  void references(std::int64_t, const json::object&) override {}
  void title(const std::string&) override {}
  void delta(const llm::Delta&) override {}
};

template <class T> T run(asio::io_context& io, asio::awaitable<T> work) {
  std::optional<T> out;
  std::exception_ptr error;
  asio::co_spawn(io, std::move(work), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) out = std::move(v);
  });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

std::string text_of(std::mt19937_64& rng, std::size_t bytes) {
  static const char* words[] = {"compile", "the", "session", "store", "answer", "with", "tests", "fold", "log", "model"};
  std::string out;
  while (out.size() < bytes) out += std::string(words[rng() % 10]) + " ";
  return out;
}

struct Figures {
  double ms = 0;             // excluding the model
  double model_ms = 0;
  std::uint64_t log_before = 0, log_after = 0;
  std::size_t request_bytes_before = 0, request_bytes_after = 0;
  std::int64_t tokens_before = 0, tokens_after = 0;
  std::size_t messages = 0;
};

Figures one_run(store::Encoding encoding, std::size_t messages) {
  fs::path root = fs::temp_directory_path() / ("dsh-bench-compaction-" + std::to_string(std::random_device{}()));
  fs::create_directories(root);
  support::Config config;
  config.provider = "echo";
  config.model = "echo";
  asio::io_context io;
  asio::thread_pool pool(2);
  Figures f;
  {
    engine::StoreHandle store([&] {
      store::StoreOptions o;
      o.root = (root / "store").string();
      o.cache_dir = (root / "cache").string();
      o.encoding = encoding;
      return std::make_unique<store::SessionStore>(o);
    });
    refs::SessionReferenceService references(std::make_shared<handlers::StoreSessionSource>(store), refs::Config{});
    TimedProvider provider(llm::make_echo_provider(io.get_executor(), std::chrono::milliseconds(0)));
    engine::Engine engine(engine::EngineServices{config, provider, store, references, "system {cwd}"},
                          io.get_executor(), pool.get_executor());
    auto session = run(io, engine.create_session("/bench", {}));

    // The history, written directly (not timed): turn/start, user, assistant, turn/end per turn.
    std::mt19937_64 rng(42);
    {
      store::SessionWriter writer = store.get().open_or_create(session->header);
      std::vector<store::NewEvent> batch;
      for (std::size_t turn = 1; turn <= messages / 2; ++turn) {
        auto t = static_cast<std::int64_t>(turn);
        batch.push_back(store::events::turn_start(t));
        batch.push_back(store::events::user_message(text_of(rng, 200)));
        batch.push_back(store::events::assistant_message(t, 1, json::array{json::object{{"type", "text"}, {"text", text_of(rng, 200)}}},
                                                         "echo", "echo"));
        batch.push_back(store::events::turn_end(t, store::events::reason("completed")));
        if (batch.size() >= 2000) writer.append(std::move(batch), false), batch.clear();
      }
      writer.append(std::move(batch), true);
    }
    Silent silent;
    run(io, engine.prompt(session->id, {"before", {}}, silent));  // reads the log; request size before
    f.request_bytes_before = provider.last_bytes;
    f.tokens_before = provider.last_tokens;
    std::string path = *store.get().find_log(session->id);
    f.log_before = fs::file_size(path);
    provider.model_time = {};
    auto start = Clock::now();
    engine::CompactResult result = run(io, engine.compact(session->id, "", silent));
    auto wall = Clock::now() - start;
    if (result.kind != engine::CompactResult::Kind::compacted) {
      std::fprintf(stderr, "bench_compaction: compaction did not happen: %s\n", result.message.c_str());
      std::exit(1);
    }
    f.model_ms = std::chrono::duration<double, std::milli>(provider.model_time).count();
    f.ms = std::chrono::duration<double, std::milli>(wall).count() - f.model_ms;
    f.messages = result.report.messages;
    f.log_after = fs::file_size(path);
    run(io, engine.prompt(session->id, {"after", {}}, silent));
    f.request_bytes_after = provider.last_bytes;
    f.tokens_after = provider.last_tokens;
  }
  pool.join();
  std::error_code ec;
  fs::remove_all(root, ec);
  return f;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t messages = 10000;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--messages")) messages = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  std::printf("compaction of a %zu-message session on the echo model (docs/decisions.md#benchmarks): wall time of /compact minus the\n"
              "model's stream time (plan, summariser request, compact/start, fsynced summary+checkpoint+end), minimum of %d runs;\n"
              "log bytes appended; the request of a prompt before and after (UTF-8 bytes, estimated tokens)\n",
              messages, runs);
  for (auto [name, encoding] : {std::pair{"raw", store::Encoding::none}, std::pair{"zstd", store::Encoding::zstd}}) {
    Figures best;
    best.ms = 1e300;
    for (int r = 0; r < runs; ++r) {
      Figures f = one_run(encoding, messages);
      if (f.ms < best.ms) best = f;
    }
    std::printf("  %-4s  %8.2f ms (model %.2f ms)  %zu messages condensed  log %llu -> %llu bytes (+%llu)  "
                "request %zu -> %zu bytes, %lld -> %lld tokens\n",
                name, best.ms, best.model_ms, best.messages, static_cast<unsigned long long>(best.log_before),
                static_cast<unsigned long long>(best.log_after),
                static_cast<unsigned long long>(best.log_after - best.log_before), best.request_bytes_before,
                best.request_bytes_after, static_cast<long long>(best.tokens_before),
                static_cast<long long>(best.tokens_after));
    bench::result(std::string("compaction_") + name + "_ms", best.ms, "ms",
                  "\"note\":\"" + std::to_string(best.messages) + " messages; request " +
                      std::to_string(best.request_bytes_before) + " -> " + std::to_string(best.request_bytes_after) +
                      " bytes; log +" + std::to_string(best.log_after - best.log_before) + " bytes\"");
  }
  return 0;
}
