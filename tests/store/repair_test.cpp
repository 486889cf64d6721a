// Crash repair closers (docs/store-format.md#crash-repair), byte for byte, written only under the lock by a
// writer, never by a reader.
#include "support.hpp"

#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/log_state.hpp"
#include "store/zstd_frames.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <random>
#include <set>

using namespace acp::store;
using namespace store_test;

BOOST_AUTO_TEST_SUITE(repair)

namespace {

const std::string kHeader = R"({"type":"session","version":0,"id":"r","createdAt":1,"cwd":"/w","delegationDepth":0})";

std::string interrupted_log() {
  return kHeader + "\n" +
         R"({"type":"turn/start","seq":0,"time":100,"data":{"turn":4,"trigger":{"kind":"message","source":{"kind":"user"}}}})" "\n"
         R"({"type":"user/message","seq":1,"time":100,"data":{"content":[{"type":"text","text":"go"}],"source":{"kind":"user"}},"surfaceOp":"append"})" "\n"
         R"({"type":"step/start","seq":2,"time":101,"data":{"turn":4,"step":2}})" "\n"
         R"({"type":"assistant/message","seq":3,"time":102,"data":{"turn":4,"step":2,"content":[{"type":"tool-call","id":"call_a","name":"bash","arguments":"{}"},{"type":"tool-call","id":"call_b","name":"read","arguments":"{}"},{"type":"tool-call","id":"call_c","name":"ls","arguments":"{}"}],"provenance":{"provider":"p","model":"m"}},"sourceEventSeqs":[],"surfaceOp":"append"})" "\n"
         R"({"type":"tool/call","seq":4,"time":103,"data":{"turn":4,"step":2,"callId":"call_a","name":"bash","arguments":"{}"}})" "\n"
         R"({"type":"tool/call","seq":5,"time":104,"data":{"turn":4,"step":2,"callId":"call_c","name":"ls","arguments":"{}"}})" "\n"
         R"({"type":"tool/result","seq":6,"time":105,"data":{"turn":4,"step":2,"callId":"call_c","content":[],"isError":false},"surfaceOp":"append"})" "\n";
}

} // namespace

BOOST_AUTO_TEST_CASE(closers_are_byte_exact) {
  TempDir dir;
  const std::string path = dir.path() + "/root/" + bucket_name(std::string("/w")) + "/r.jsonl";
  const std::string original = interrupted_log() + R"({"type":"tool/res)";  // torn tail too
  write_file(path, original);
  auto store = open_store(dir, std::nullopt);
  BOOST_TEST(store->read_log("r").events.size() == 7u);
  BOOST_TEST(read_file(path) == original);  // the reader left it alone
  {
    auto w = store->open("r");
    BOOST_TEST(w.next_seq() == 11);
    BOOST_TEST(!w.turn_open());
  }
  const std::string expected =
      interrupted_log() +
      R"({"type":"tool/result","seq":7,"time":105,"data":{"turn":4,"step":2,"callId":"call_a","content":[{"type":"text","text":"The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."}],"isError":true,"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[4]})" "\n"
      R"({"type":"tool/result","seq":8,"time":105,"data":{"turn":4,"step":2,"callId":"call_b","content":[{"type":"text","text":"The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."}],"isError":true,"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"})" "\n"
      R"({"type":"step/end","seq":9,"time":105,"data":{"turn":4,"step":2}})" "\n"
      R"({"type":"turn/end","seq":10,"time":105,"data":{"turn":4,"reason":{"kind":"interrupted"}}})" "\n";
  BOOST_TEST(read_file(path) == expected);
  // The repaired log folds (closers are valid surface events) and a second open changes nothing.
  BOOST_CHECK_NO_THROW(store->read_surface("r"));
  { auto w = open_store(dir, std::nullopt)->open("r"); }
  BOOST_TEST(read_file(path) == expected);
}

BOOST_AUTO_TEST_CASE(pending_calls_reset_at_step_end) {
  LogState s;
  auto ev = [](const char* text) { return boost::json::parse(text).as_object(); };
  s.observe(ev(R"({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}})"));
  s.observe(ev(R"({"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}})"));
  s.observe(ev(R"({"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":1,"content":[{"type":"tool-call","id":"x"}]}})"));
  s.observe(ev(R"({"type":"step/end","seq":3,"time":7,"data":{"turn":1,"step":1}})"));
  auto closers = s.closers();
  BOOST_REQUIRE(closers.size() == 1u);  // only turn/end: the pending call was dropped at step/end
  BOOST_TEST(closers[0].at("type").as_string() == "turn/end");
  BOOST_TEST(closers[0].at("seq").as_int64() == 4);
  BOOST_TEST(closers[0].at("time").as_int64() == 7);
}

// Scans may parse each line into an arena of its own (EventLifetime::transient): what the state
// keeps (open turn and step, pending calls, title) must own its memory, or a big line's arena
// would live on for the rest of the scan.
BOOST_AUTO_TEST_CASE(state_keeps_no_reference_to_an_events_arena) {
  // A monotonic arena (final, so wrapped) that reports its destruction.
  struct TrackedArena : boost::json::memory_resource {
    explicit TrackedArena(std::shared_ptr<bool> a) : alive(std::move(a)) { *alive = true; }
    ~TrackedArena() override { *alive = false; }
    void* do_allocate(std::size_t n, std::size_t align) override { return arena.allocate(n, align); }
    void do_deallocate(void* p, std::size_t n, std::size_t align) override { arena.deallocate(p, n, align); }
    bool do_is_equal(const boost::json::memory_resource& other) const noexcept override { return this == &other; }
    boost::json::monotonic_resource arena;
    std::shared_ptr<bool> alive;
  };
  auto alive = std::make_shared<bool>(false);
  LogState s;
  for (const char* line :
       {R"({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}})",
        R"({"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}})",
        R"({"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":1,"content":[{"type":"tool-call","id":"x"}]}})",
        R"({"type":"session/title","seq":3,"time":2,"data":{"title":"t","messageSeqs":[1],"source":{"kind":"fallback"}}})"}) {
    {
      boost::json::value v = boost::json::parse(line, boost::json::make_shared_resource<TrackedArena>(alive));
      s.observe(v.as_object());
      BOOST_TEST(*alive);
    }
    BOOST_TEST(!*alive, "the state keeps the arena of " << line);
  }
  auto closers = s.closers();  // still knows the open turn, step and call
  BOOST_REQUIRE(closers.size() == 3u);
  BOOST_TEST(closers[0].at("data").at("callId").as_string() == "x");
  BOOST_TEST(s.title()->title == "t");
}

BOOST_AUTO_TEST_CASE(closed_logs_are_not_touched) {
  TempDir dir;
  const std::string path = dir.path() + "/root/" + bucket_name(std::string("/w")) + "/r.jsonl";
  const std::string closed = interrupted_log() +
                             R"({"type":"turn/end","seq":7,"time":106,"data":{"turn":4,"reason":{"kind":"aborted"}}})" "\n";
  write_file(path, closed);
  { auto w = open_store(dir, std::nullopt)->open("r"); }
  BOOST_TEST(read_file(path) == closed);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(repair)

BOOST_AUTO_TEST_CASE(a_turn_left_open_in_this_process_is_repaired_on_the_next_open) {
  TempDir dir;
  auto store = open_store(dir, Encoding::zstd);
  {
    auto w = store->create(make_header("s"));
    w.append({events::turn_start(1), events::user_message("hi")});
    // The writer goes away mid-turn (an exception in the host, say): the lock is released.
  }
  auto w = store->open("s");  // same store instance: its cache must not hide the open turn
  BOOST_TEST(!w.turn_open());
  BOOST_TEST(w.next_seq() == 3);
  w.release();
  auto log = store->read_log("s");
  BOOST_REQUIRE(log.events.size() == 3u);
  BOOST_TEST(log.events[2].at("type").as_string() == "turn/end");
  BOOST_TEST(log.events[2].at("data").at("reason").at("kind").as_string() == "interrupted");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(repair)

// docs/decisions.md#test-data: logs cut at arbitrary byte offsets. A cut never makes a log corrupt: readers see a
// prefix of the events, and the first writer repairs it into a log that folds and whose turns are
// all closed.
BOOST_AUTO_TEST_CASE(logs_cut_at_every_byte_offset_load_and_repair) {
  for (Encoding enc : {Encoding::none, Encoding::zstd}) {
    TempDir origin;
    std::string path;
    {
      auto store = open_store(origin, enc);
      auto w = store->create(make_header("cut"));
      write_turn(w, "first prompt", 100);
      write_turn(w, "second prompt", 200);
      path = w.path();
    }
    const std::string full = read_file(path);
    const std::string rel = path.substr(origin.path().size());
    const std::size_t header_end =
        enc == Encoding::none ? full.find('\n') + 1 : scan_frames(full).frames.at(0).size;
    // Every line/frame boundary and its neighbours, plus random offsets (seed printed on failure).
    std::set<std::size_t> cuts{header_end, full.size()};
    if (enc == Encoding::none) {
      for (std::size_t p = full.find('\n'); p != std::string::npos; p = full.find('\n', p + 1))
        for (std::size_t d : {p, p + 1, p + 2}) cuts.insert(d);
    } else {
      for (const auto& f : scan_frames(full).frames)
        for (std::size_t d : {f.offset, f.offset + 1, f.offset + 5, f.offset + f.size - 4, f.offset + f.size - 1})
          cuts.insert(d);
    }
    const unsigned seed = 20260702;
    std::mt19937 rng(seed);
    for (int i = 0; i < 120; ++i) cuts.insert(header_end + rng() % (full.size() - header_end + 1));
    std::size_t previous = 0;
    for (std::size_t cut : cuts) {
      if (cut < header_end || cut > full.size()) continue;
      BOOST_TEST_CONTEXT("encoding " << int(enc) << " cut " << cut << " seed " << seed) {
        TempDir dir;
        write_file(dir.path() + rel, full.substr(0, cut));
        std::size_t seen = 0;
        {
          auto store = open_store(dir, std::nullopt);
          seen = store->read_log("cut").events.size();
          BOOST_TEST(seen >= previous);  // longer cuts never lose events
          previous = seen;
          auto w = store->open("cut");
          BOOST_TEST(!w.turn_open());
          BOOST_TEST(w.next_seq() >= std::int64_t(seen));
        }
        auto store = open_store(dir, std::nullopt);
        auto log = store->read_log("cut");
        for (std::size_t i = 0; i < log.events.size(); ++i)
          BOOST_TEST(log.events[i].at("seq").as_int64() == std::int64_t(i));
        BOOST_CHECK_NO_THROW(store->read_surface("cut"));
        if (!log.events.empty()) BOOST_TEST(log.events.back().at("type").as_string() == "turn/end");
      }
    }
    BOOST_TEST(previous == 17u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
