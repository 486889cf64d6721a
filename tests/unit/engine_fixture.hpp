// The in-process engine fixture shared by engine_test.cpp and compaction_test.cpp: a scripted fake
// provider, an observer that records what a turn reports, and "processes" (store handle, reference
// service, engine) over one temporary store root.
#pragma once

#include "../common/temp_dir.hpp"
#include "engine/engine.hpp"
#include "handlers/store_source.hpp"
#include "refs/service.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"
#include "support/config.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace engine_fixture {

using namespace acp;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;

// A model that answers each request from a script: text deltas and a stop kind, or it waits until
// it is cancelled (`hang`). Every request it receives is kept.
class FakeProvider final : public llm::Provider {
public:
  explicit FakeProvider(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  asio::awaitable<llm::Completion> stream(const llm::Request& request, llm::DeltaSink sink) override {
    requests.push_back(request);
    llm::Completion c;
    c.provider = name_;
    c.model = request.model;
    const bool summary = request.purpose == llm::Purpose::summary;
    if (summary && summary_error) throw llm::ProviderError("PROVIDER_UNAVAILABLE", "summariser down", 503);
    if (summary && summary_cut) {
      sink(llm::Delta{llm::DeltaKind::text, summary_text});
      throw std::runtime_error("");  // a failure after part of the summary, with no message
    }
    if (!summary && too_long > 0) {
      --too_long;
      throw llm::ProviderError("PROVIDER_BAD_REQUEST", "This model's maximum context length is 1000 tokens", 400);
    }
    if (hang || (summary && hang_summary)) {
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
      ++waiting;
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      --waiting;
      c.stop = llm::StopKind::cancelled;
      co_return c;
    }
    if (summary) {
      sink(llm::Delta{llm::DeltaKind::text, summary_text});
      co_return c;
    }
    if (!tool_steps.empty() && (keep_calling || request.messages.back().role != llm::Role::tool)) {
      // One scripted step of calls, each in two fragments as servers stream them.
      std::vector<llm::ToolCall> calls = std::move(tool_steps.front());
      tool_steps.pop_front();
      sink(llm::Delta{llm::DeltaKind::text, "calling"});
      for (std::size_t k = 0; k < calls.size(); ++k) {
        const std::string& args = calls[k].arguments;
        sink(llm::Delta{llm::DeltaKind::tool_call, args.substr(0, args.size() / 2), k, calls[k].id, calls[k].name});
        sink(llm::Delta{llm::DeltaKind::tool_call, args.substr(args.size() / 2), k, {}, {}});
      }
      c.tool_calls = std::move(calls);
      co_return c;
    }
    if (!thought.empty()) sink(llm::Delta{llm::DeltaKind::reasoning, thought});
    for (const auto& d : answer) {
      if (paced) {
        // As the real providers do: wait for room, stop when cancelled.
        co_await sink.room();
        auto state = co_await asio::this_coro::cancellation_state;
        if (state.cancelled() != asio::cancellation_type::none) {
          c.stop = llm::StopKind::cancelled;
          co_return c;
        }
        ++paced_deltas;
      }
      sink(llm::Delta{llm::DeltaKind::text, d});
    }
    c.stop = stop;
    c.usage = usage;
    co_return c;
  }
  /// Scripted steps of tool calls: a turn's first request takes the next (later steps answer with
  /// text), or every request while `keep_calling`.
  std::deque<std::vector<llm::ToolCall>> tool_steps;
  bool keep_calling = false;
  bool paced = false;       ///< answers await room() and observe cancellation between deltas
  int paced_deltas = 0;     ///< deltas a paced answer delivered
  std::vector<llm::Request> requests;
  std::string summary_text = "## Goal\n- fake summary\n## Next steps\n- none";
  bool summary_error = false;   ///< summary requests fail (503)
  bool summary_cut = false;     ///< summary requests stream the text, then throw without a message
  bool hang_summary = false;    ///< summary requests wait until cancelled
  int too_long = 0;             ///< the next N answer requests fail "maximum context length" (400)
  std::vector<std::string> answer{"hello ", "there"};
  std::string thought;              ///< reasoning streamed before the answer, when not empty
  std::optional<llm::Usage> usage;  ///< what an answer reports (none: no usage chunk)
  llm::StopKind stop = llm::StopKind::end_turn;
  bool hang = false;
  int waiting = 0;

private:
  std::string name_;
};

struct Recorder final : engine::TurnObserver {
  void references(std::int64_t seq, const json::object&) override { cards.push_back(seq); }
  void title(const std::string& t) override { titles.push_back(t); }
  void delta(const llm::Delta& d) override {
    text += d.text;
    order.push_back("delta");
  }
  void compacted(const engine::CompactionReport& r) override {
    compactions.push_back(r);
    order.push_back("compacted");
  }
  void model_call(const engine::ModelCallUsage& u) override {
    calls.push_back(u);
    order.push_back("model_call");
  }
  std::vector<engine::ModelCallUsage> calls;
  std::vector<engine::CompactionReport> compactions;
  std::vector<std::string> order;  ///< "compacted" / "delta", as reported
  std::vector<std::int64_t> cards;
  std::vector<std::string> titles;
  std::string text;
};

// The layout a new store root takes in these tests: DSH_ACP_STORE_GENERATION like the server
// (the suite runs once per layout), else 45fc.
inline store::Generation test_store_generation() {
  const char* env = std::getenv("DSH_ACP_STORE_GENERATION");
  return env && *env ? store::parse_generation(env).value_or(store::Generation::flat) : store::Generation::flat;
}

// One "process": its own store handle, reference service and engine over a shared root.
struct Process {
  Process(const std::string& root, support::Config& config, llm::Provider& provider, asio::io_context& io,
          asio::thread_pool& pool, store::Generation generation,
          std::chrono::milliseconds lock_timeout = store::StoreOptions{}.lock_timeout)
      : store([root, generation, lock_timeout] {
          store::StoreOptions o;
          o.root = root + "/store";
          o.cache_dir = root + "/cache";
          o.encoding = store::Encoding::none;
          o.default_generation = generation;
          o.lock_timeout = lock_timeout;
          return std::make_unique<store::SessionStore>(o);
        }),
        references(std::make_shared<handlers::StoreSessionSource>(store), refs::Config{}),
        engine(engine::EngineServices{config, provider, store, references, "system {cwd}"}, io.get_executor(),
               pool.get_executor()) {}
  engine::StoreHandle store;
  refs::SessionReferenceService references;
  engine::Engine engine;
};

struct Fixture {
  /// `generation`: the layout of the new store root (the run's, else pinned by a test of a 45fc fact).
  explicit Fixture(store::Generation generation = test_store_generation())
      : root(dir.path()), provider("fake"), generation(generation) {
    config.provider = "fake";
    config.model = "m1";
    config.models = {"m2"};
  }
  ~Fixture() { pool.join(); }  // before the root goes: pool threads may still write there
  std::unique_ptr<Process> process() {
    return std::make_unique<Process>(root, config, provider, io, pool, generation, lock_timeout);
  }

  template <class T> T run(asio::awaitable<T> work) {
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
  void run(asio::awaitable<void> work) {
    std::exception_ptr error;
    asio::co_spawn(io, std::move(work), [&](std::exception_ptr e) { error = e; });
    io.restart();
    io.run();
    if (error) std::rethrow_exception(error);
  }

  std::vector<json::object> events(Process& p, const std::string& id) { return p.store.get().read_log(id).events; }

  /// A user-cancelled turn's reason as the root's layout stores it: 45fc {"kind":"aborted"}, 0.1.1
  /// with its cause (docs/store-format.md#release-011-shapes).
  std::string aborted_reason() const {
    return generation == store::Generation::flat ? R"({"kind":"aborted"})" : R"({"kind":"aborted","reason":{"kind":"user"}})";
  }

  acp::test::TempDir dir{"dsh-engine"};  ///< removed last, after the pool has stopped
  std::string root;
  support::Config config;
  FakeProvider provider;
  store::Generation generation;
  /// How long the processes made from now on wait for a session's lock.
  std::chrono::milliseconds lock_timeout = store::StoreOptions{}.lock_timeout;
  asio::io_context io;
  asio::thread_pool pool{4};
};

inline std::vector<std::string> types(const std::vector<json::object>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.emplace_back(store::string_at(e, "type"));
  return out;
}

inline const json::object& last_of(const std::vector<json::object>& events, std::string_view type) {
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if (store::string_at(*it, "type") == type) return *it;
  throw std::runtime_error("no " + std::string(type));
}

} // namespace engine_fixture
