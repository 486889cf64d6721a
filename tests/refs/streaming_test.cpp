// The streaming reader of referenced sessions (refs/streaming_projection.hpp) against the old
// whole-log path (fold_surface over every event, then project + retain): byte-identical prompts,
// source records and errors on every harness fixture, and on random logs with compactions (replace
// ranges anywhere on the surface), tool/result replacements, injected context and multi-block texts,
// in memory and through real raw and zstd stores; its memory stays within the budget; a fold error
// stays behind a later corrupt line as before.
#include "test_support.hpp"

#include "refs/errors.hpp"
#include "refs/retention.hpp"
#include "refs/streaming_projection.hpp"

#include "store/errors.hpp"
#include "store/fold.hpp"
#include "store/records.hpp"
#include "support.hpp"

#include "support/json_text.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>

using namespace acp;
using namespace refs_test;

namespace {

const std::vector<std::int64_t> kBudgets{1LL << 40, 65536, 8192, 1500, 400, 94};

// The outcome of rendering one source, as comparable text: the prompt and the source record, or
// the error's code and message.
template <class Source>
std::string outcome(const std::function<Source()>& read, std::int64_t budget) {
  try {
    std::vector<Source> sources;
    sources.push_back(read());
    std::vector<refs::NormalizedReference> references{{"src", "label <x>"}};
    refs::AdditionalContext c = refs::render_context(references, sources, budget);
    return "ok " + c.prompt + "\n" + support::to_json_text(c.source);
  } catch (const refs::SessionReferenceError& e) {
    return "error " + std::string(e.code_name()) + ": " + e.what();
  } catch (const std::exception& e) {
    return std::string("failure: ") + e.what();
  }
}

// The old path over events in memory: the whole fold, then the surface events.
store::SurfaceSnapshot folded(const std::vector<json::object>& events) {
  store::SurfaceSnapshot s;
  s.session.id = "src";
  s.session.cwd = "/work/src";
  if (!events.empty()) s.capturedThroughSeq = std::int64_t(events.size()) - 1;
  for (auto seq : store::fold_surface(events)) s.events.push_back(events[std::size_t(seq)]);
  return s;
}

// The streaming path over events in memory; counts the passes.
refs::ProjectedSource streamed(const std::vector<json::object>& events, std::int64_t budget, int* passes = nullptr) {
  refs::EventStream stream = [&](const refs::EventSink& sink) {
    if (passes) ++*passes;
    for (const auto& e : events) sink(json::object(e));
    refs::StreamedLog log;
    log.header.id = "src";
    log.header.cwd = "/work/src";
    if (!events.empty()) log.captured_through_seq = std::int64_t(events.size()) - 1;
    return log;
  };
  return refs::project_log(stream, budget);
}

// A random, valid log (docs/store-format.md#event-types, docs/store-format.md#folding): prompt turns with
// chunks, injected context, steering, tool results and their content replacements, and compactions over any
// surface range.
class LogBuilder {
public:
  explicit LogBuilder(unsigned seed) : rng_(seed) {}

  std::vector<json::object> build(int steps) {
    for (int i = 0; i < steps; ++i) {
      int pick = roll(100);
      if (pick < 25) message("user/message", json::object{{"kind", "user"}});
      else if (pick < 45) assistant();
      else if (pick < 50) message("user/message", json::object{{"kind", "plugin"}, {"plugin", "goal"}});
      else if (pick < 54) message("steering/message", json::object{{"kind", roll(2) ? "user" : "plugin"}});
      else if (pick < 62) tool_result();
      else if (pick < 66) replace_tool_result();
      else if (pick < 72) compaction();
      else if (pick < 90) plain("assistant/chunk");
      else plain("turn/end");
    }
    return std::move(events_);
  }

private:
  int roll(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string text() {
    static const char* const pieces[] = {"plain ", "<tag> ", "quote \" ", "back\\slash ", "é ", "\xE2\x80\xA6 ",
                                         "\xEF\xBB\xBF", "\n", "ctl\x01 ", "😀 "};
    int size = roll(4) == 0 ? roll(3000) : roll(120);
    std::string out;
    while (static_cast<int>(out.size()) < size) out += pieces[roll(10)];
    return out;
  }

  json::array content() {
    json::array blocks;
    int n = roll(5) == 0 ? 1 + roll(3) : 1;
    for (int i = 0; i < n; ++i) {
      if (roll(6) == 0) blocks.push_back(json::object{{"type", "reasoning"}, {"text", text()}});
      else blocks.push_back(json::object{{"type", "text"}, {"text", roll(8) == 0 ? std::string() : text()}});
    }
    return blocks;
  }

  json::object& push(std::string_view type, json::object data) {
    json::object e{{"type", type}, {"seq", seq()}, {"time", 1700000000000 + seq()}, {"data", std::move(data)}};
    events_.push_back(std::move(e));
    return events_.back();
  }
  std::int64_t seq() const { return std::int64_t(events_.size()); }

  void append_node(json::object& e, bool tool) {
    e["surfaceOp"] = "append";
    nodes_.push_back({e.at("seq").as_int64(), tool});
  }

  void plain(std::string_view type) { push(type, json::object{{"turn", 1}}); }

  void message(std::string_view type, json::object source) {
    auto& e = push(type, json::object{{"content", content()}, {"source", std::move(source)}});
    append_node(e, false);
  }

  void assistant() {
    json::array sources;
    if (!nodes_.empty() && roll(2)) sources.push_back(nodes_.back().seq);
    auto& e = push("assistant/message", json::object{{"turn", 1}, {"step", 1}, {"content", content()}});
    e["sourceEventSeqs"] = std::move(sources);
    append_node(e, false);
  }

  json::object tool_data(std::int64_t call, json::array content) {
    return json::object{{"turn", 1}, {"step", 1}, {"callId", "c" + std::to_string(call)}, {"content", std::move(content)},
                        {"isError", false}};
  }

  void tool_result() {
    auto& e = push("tool/result", tool_data(seq(), content()));
    append_node(e, true);
  }

  void replace_tool_result() {
    std::vector<std::size_t> tools;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].tool) tools.push_back(i);
    if (tools.empty()) return tool_result();
    std::size_t at = tools[std::size_t(roll(int(tools.size())))];
    std::int64_t old = nodes_[at].seq;
    json::object data = events_[std::size_t(old)].at("data").as_object();
    data["content"] = json::array{json::object{{"type", "text"}, {"text", "[elided]"}}};
    auto& e = push("tool/result", std::move(data));
    e["sourceEventSeqs"] = json::array{old};
    e["surfaceOp"] = json::object{{"op", "replace"}, {"start", old}, {"end", old}};
    nodes_[at].seq = e.at("seq").as_int64();
  }

  void compaction() {
    if (nodes_.empty()) return;
    std::size_t a = std::size_t(roll(int(nodes_.size())));
    std::size_t b = a + std::size_t(roll(int(nodes_.size() - a)));
    std::int64_t start = seq();
    plain("compact/start");
    std::int64_t summary = seq();
    push("compact/summary", json::object{{"summary", json::array{}}});
    json::array sources{start, summary};
    for (std::size_t i = a; i <= b; ++i) sources.push_back(nodes_[i].seq);
    json::array blocks{json::object{{"type", "text"}, {"text", "checkpoint\n\n<compacted-summary>"}},
                       json::object{{"type", "text"}, {"text", text()}},
                       json::object{{"type", "text"}, {"text", "</compacted-summary>"}}};
    if (roll(10) == 0) blocks = json::array{};  // a checkpoint without text projects to nothing
    auto& e = push("user/message", json::object{{"content", std::move(blocks)},
                                                {"source", json::object{{"kind", "plugin"}, {"plugin", "compact"}}}});
    e["sourceEventSeqs"] = std::move(sources);
    e["surfaceOp"] = json::object{{"op", "replace"}, {"start", nodes_[a].seq}, {"end", nodes_[b].seq}};
    Node checkpoint{e.at("seq").as_int64(), false};
    nodes_.erase(nodes_.begin() + std::ptrdiff_t(a), nodes_.begin() + std::ptrdiff_t(b) + 1);
    nodes_.insert(nodes_.begin() + std::ptrdiff_t(a), checkpoint);
    plain("compact/end");
  }

  struct Node {
    std::int64_t seq;
    bool tool;
  };
  std::mt19937 rng_;
  std::vector<json::object> events_;
  std::vector<Node> nodes_;
};

std::string first_difference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "at byte " + std::to_string(i) + ": old …" + a.substr(i > 60 ? i - 60 : 0, 160) + "\n new …" +
         b.substr(i > 60 ? i - 60 : 0, 160);
}

} // namespace

BOOST_AUTO_TEST_CASE(streaming_projection_matches_fold_on_random_compacted_logs) {
  int second_passes = 0, released_somewhere = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::vector<json::object> events = LogBuilder(seed).build(seed % 3 == 0 ? 600 : 150);
    for (std::int64_t budget : kBudgets) {
      int passes = 0;
      std::string old_out = outcome<store::SurfaceSnapshot>([&] { return folded(events); }, budget);
      std::string new_out = outcome<refs::ProjectedSource>([&] { return streamed(events, budget, &passes); }, budget);
      BOOST_TEST_INFO("seed " << seed << ", budget " << budget);
      BOOST_TEST(old_out == new_out, first_difference(old_out, new_out));
      second_passes += passes == 2;
      auto projected = streamed(events, budget);
      for (const auto& item : projected.conversation.items) released_somewhere += item.released();
    }
  }
  // The random logs reach both the early release and the second pass that takes texts back.
  BOOST_TEST(released_somewhere > 0);
  BOOST_TEST(second_passes > 0);
}

BOOST_AUTO_TEST_CASE(streaming_fold_errors_match_fold_surface) {
  // Breaking a random valid log at one event: the same FoldError message as the whole-log fold.
  std::mt19937 rng(7);
  int errors = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::vector<json::object> events = LogBuilder(seed).build(120);
    std::size_t at = std::uniform_int_distribution<std::size_t>(0, events.size() - 1)(rng);
    json::object& e = events[at];
    switch (seed % 5) {
      case 0: e["surfaceOp"] = json::object{{"op", "replace"}, {"start", 999999}, {"end", 0}}; break;
      case 1: e["sourceEventSeqs"] = json::array{std::int64_t(at)}; break;
      case 2: e.erase("surfaceOp"); break;
      case 3: e["surfaceOp"] = "prepend"; break;
      case 4:
        if (auto* op = e.if_contains("surfaceOp"); op && op->is_object()) (*op).as_object()["end"] = (*op).at("start");
        else e["sourceEventSeqs"] = json::array{-1};
        break;
    }
    std::string old_error, new_error;
    try {
      folded(events);
    } catch (const store::FoldError& x) {
      old_error = x.what();
    }
    try {
      streamed(events, 65536);
    } catch (const store::FoldError& x) {
      new_error = x.what();
    }
    BOOST_TEST_INFO("seed " << seed);
    BOOST_TEST(old_error == new_error);
    errors += !old_error.empty();
  }
  BOOST_TEST(errors > 10);
}

BOOST_AUTO_TEST_CASE(streaming_projection_memory_stays_within_the_budget) {
  // 20,000 messages of 1 KB (20 MB of text) under a 64 KiB budget: at no point does the projector
  // hold more than the budget's worth of texts plus the newest one.
  refs::StreamingProjector projector(65536);
  std::size_t most = 0;
  for (std::int64_t seq = 0; seq < 20000; ++seq) {
    json::object e = seq % 2 ? assistant(std::string(1024, 'a'), seq) : user(std::string(1024, 'u'), seq);
    if (seq % 2) e["sourceEventSeqs"] = json::array{};
    projector.add(e);
    most = std::max(most, projector.held_texts());
  }
  BOOST_TEST(most <= 65536 / 1024 + 2);
  refs::ProjectedConversation c = projector.finish();
  BOOST_TEST(c.items.size() == 20000u);
  std::size_t released = 0;
  for (const auto& item : c.items) released += item.released();
  BOOST_TEST(released >= 20000u - (65536 / 1024 + 2));
}

BOOST_AUTO_TEST_CASE(streaming_projection_matches_read_surface_in_stores) {
  using namespace store_test;
  auto stream_of = [](store::SessionStore& s, const std::string& id) {
    return [&s, id](const refs::EventSink& sink) {
      store::StreamResult r = s.read_events(id, sink);
      return refs::StreamedLog{std::move(r.header), r.capturedThroughSeq};
    };
  };
  auto compare = [&](store::SessionStore& s, const std::string& id) {
    for (std::int64_t budget : kBudgets) {
      std::string old_out = outcome<store::SurfaceSnapshot>([&] { return s.read_surface(id); }, budget);
      std::string new_out =
          outcome<refs::ProjectedSource>([&] { return refs::project_log(stream_of(s, id), budget); }, budget);
      BOOST_TEST_INFO(id << ", budget " << budget);
      BOOST_TEST(old_out == new_out, first_difference(old_out, new_out));
    }
  };
  // Every harness fixture, the corrupt ones included (both paths report the same StoreCorrupt).
  int fixtures = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::string(DSH_TEST_DATA) + "/fixtures/harness")) {
    std::string name = f.path().filename().string();
    name = name.substr(0, name.find(".session.jsonl"));
    TempDir dir;
    std::string id = install_fixture(dir, name);
    auto s = open_store(dir, std::nullopt);
    compare(*s, id);
    ++fixtures;
  }
  BOOST_TEST(fixtures >= 16);
  // Random compacted logs written by the store in both encodings, in batches (zstd: one frame each).
  for (auto enc : {store::Encoding::none, store::Encoding::zstd}) {
    for (unsigned seed = 100; seed < 106; ++seed) {
      TempDir dir;
      auto s = open_store(dir, enc);
      std::vector<json::object> events = LogBuilder(seed).build(300);
      {
        auto w = s->create(make_header("gen"));
        for (std::size_t i = 0; i < events.size(); i += 7) {
          std::vector<json::object> batch(events.begin() + std::ptrdiff_t(i),
                                          events.begin() + std::ptrdiff_t(std::min(events.size(), i + 7)));
          w.append_records(batch);
        }
      }
      compare(*s, "gen");
    }
  }
}

BOOST_AUTO_TEST_CASE(streaming_keeps_a_later_corrupt_line_first) {
  // An invalid surface early in the log and an unparsable line inside finished history later: the
  // whole-log path reports the corruption (it reads everything before folding); so must streaming.
  using namespace store_test;
  TempDir dir;
  auto s = open_store(dir, store::Encoding::none);
  {
    auto w = s->create(make_header("bad"));
    write_turn(w, "hello");
  }
  std::string path = *s->find_log("bad");
  std::string count = std::to_string(split_lines(read_file(path)).size() - 1);
  append_file(path, R"({"type":"user/message","seq":)" + count +
                        R"(,"time":1,"data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"prepend"})" "\n");
  append_file(path, "{not json\n");
  append_file(path, R"({"type":"turn/end","seq":99,"time":1,"data":{"turn":9,"reason":{"kind":"completed"}}})" "\n");
  auto read_old = [&] { return s->read_surface("bad"); };
  auto read_new = [&] {
    return refs::project_log(
        [&](const refs::EventSink& sink) {
          auto r = s->read_events("bad", sink);
          return refs::StreamedLog{r.header, r.capturedThroughSeq};
        },
        65536);
  };
  BOOST_CHECK_THROW(read_old(), store::StoreCorrupt);
  BOOST_CHECK_THROW(read_new(), store::StoreCorrupt);
}

BOOST_AUTO_TEST_CASE(store_read_stops_when_asked) {
  using namespace store_test;
  TempDir dir;
  auto s = open_store(dir, store::Encoding::zstd);
  {
    auto w = s->create(make_header("long"));
    for (int i = 0; i < 50; ++i) write_turn(w, "turn " + std::to_string(i));
  }
  std::stop_source stop;
  int seen = 0;
  BOOST_CHECK_THROW(s->read_events(
                        "long",
                        [&](json::object&&) {
                          if (++seen == 10) stop.request_stop();
                        },
                        stop.get_token()),
                    store::ReadCancelled);
  BOOST_TEST(seen == 10);  // the very next line is not delivered
}
