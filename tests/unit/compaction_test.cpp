// Compaction (issue 9) through the engine with the scripted fake provider and a real store: the
// exact records written (golden), the fold after compaction, failure and cancel, the skip rule,
// automatic compaction under a small window, the context-too-long retry, and the token estimate.
#include "engine_fixture.hpp"

#include "engine/compaction.hpp"
#include "llm/token_estimate.hpp"
#include "store/fold.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/test/unit_test.hpp>

using namespace engine_fixture;

namespace {

// The harness's preamble, written out here independently of the code under test.
const std::string kPreamble =
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. "
    "Treat the captured context as established background and build on it without restating it. Continue the task "
    "directly from the messages that follow, without acknowledging this checkpoint.";

// A record as written, without its time (the only field a golden test cannot know).
std::string without_time(const json::object& e) {
  json::object out;  // rebuilt: object::erase does not keep the key order
  for (const auto& kv : e)
    if (kv.key() != "time") out[kv.key()] = kv.value();
  return json::serialize(out);
}

std::vector<std::string> texts(const llm::Request& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages) out.push_back(m.text);
  return out;
}

struct CompactFixture : Fixture {
  explicit CompactFixture(store::Generation generation = test_store_generation()) : Fixture(generation) {}
  std::unique_ptr<Process> p = process();
  std::shared_ptr<engine::Session> session = run(p->engine.create_session("/w", {}));
  Recorder recorder;
  void prompt(const std::string& text) { run(p->engine.prompt(session->id, {text, {}}, recorder)); }
  engine::CompactResult compact(const std::string& focus = "") {
    return run(p->engine.compact(session->id, focus, recorder));
  }
  std::vector<json::object> log() { return events(*p, session->id); }
};

} // namespace

// The records two tests compare byte for byte are 45fc's golden ones (compact/* without ids,
// turn/start's trigger, an aborted reason without its cause): they run on a 45fc root whatever the
// run's layout (0.1.1's compaction records: tests/store/generation_test.cpp, e2e harness01).
struct CompactFixture45fc : CompactFixture {
  CompactFixture45fc() : CompactFixture(store::Generation::flat) {}
};

BOOST_AUTO_TEST_SUITE(compaction)

BOOST_FIXTURE_TEST_CASE(compact_writes_the_harness_records_in_order, CompactFixture45fc) {
  prompt("one");
  prompt("two");
  prompt("three");
  const std::size_t before = log().size();
  BOOST_REQUIRE_EQUAL(before, 35u);
  auto result = compact("keep the names");
  BOOST_TEST((result.kind == engine::CompactResult::Kind::compacted));
  auto all = log();
  BOOST_REQUIRE_EQUAL(all.size(), before + 6);
  std::vector<std::string> tail;
  for (std::size_t i = before; i < all.size(); ++i) tail.push_back(without_time(all[i]));
  const std::string summary = R"("## Goal\n- fake summary\n## Next steps\n- none")";
  std::vector<std::string> golden = {
      R"({"type":"turn/start","seq":35,"data":{"turn":4,"trigger":{"kind":"message","source":{"kind":"plugin","plugin":"compact"}}}})",
      R"({"type":"compact/start","seq":36,"data":{"turn":4}})",
      R"({"type":"compact/summary","seq":37,"data":{"summary":[{"type":"text","text":)" + summary +
          R"(}],"shadowedRange":{"start":1,"end":10},"shadowedSeqs":[1,10],"shadowedTokenCount":13,"provider":"fake","model":"m1","maxTokens":4096}})",
      R"({"type":"user/message","seq":38,"data":{"content":[{"type":"text","text":")" + kPreamble +
          R"(\n\n<compacted-summary>"},{"type":"text","text":)" + summary +
          R"(},{"type":"text","text":"</compacted-summary>"}],"source":{"kind":"plugin","plugin":"compact"}},"sourceEventSeqs":[36,37,1,10],"surfaceOp":{"op":"replace","start":1,"end":10}})",
      R"({"type":"compact/end","seq":39,"data":{"turn":4}})",
      R"({"type":"turn/end","seq":40,"data":{"turn":4,"reason":{"kind":"completed"}}})",
  };
  BOOST_TEST(tail == golden, boost::test_tools::per_element());
  // The summariser got the fixed system prompt, the shadowed messages and the focus.
  const auto& req = provider.requests.back();
  BOOST_TEST((req.purpose == llm::Purpose::summary));
  BOOST_TEST(req.messages.front().text == engine::kSummarySystemPrompt);
  BOOST_REQUIRE_EQUAL(req.messages.size(), 4u);
  BOOST_TEST(req.messages[1].text == "one");
  BOOST_TEST(req.messages[2].text == "hello there");
  BOOST_TEST(req.messages[3].text.find("\nFocus: keep the names") != std::string::npos);
  BOOST_TEST(result.report.messages == 2u);
  BOOST_TEST(result.report.checkpoint_seq == 38);
  BOOST_TEST(result.report.tokens_after < result.report.tokens_before + 200);
}

BOOST_FIXTURE_TEST_CASE(fold_after_compaction_is_checkpoint_plus_later_messages, CompactFixture) {
  prompt("one");
  prompt("two");
  prompt("three");
  compact();
  BOOST_TEST((store::fold_surface(log()) == std::vector<std::int64_t>{38, 14, 21, 25, 32}));
  prompt("four");
  // The checkpoint's three text blocks are joined with nothing, as the harness's adapters join them.
  const std::string checkpoint = kPreamble + "\n\n<compacted-summary>## Goal\n- fake summary\n## Next steps\n- none</compacted-summary>";
  BOOST_TEST((texts(provider.requests.back()) ==
              std::vector<std::string>{"system /w", checkpoint, "two", "hello there", "three", "hello there", "four"}));
  // Another process derives the same request from the log.
  auto b = process();
  b->engine.attach(run(b->engine.find_stored(session->id, "/w")), std::nullopt, "", "");
  run(b->engine.prompt(session->id, {"five", {}}, recorder));
  auto r = texts(provider.requests.back());
  BOOST_REQUIRE_EQUAL(r.size(), 9u);
  BOOST_TEST(r[1] == checkpoint);
  BOOST_TEST(r[2] == "two");
  // A second compaction condenses the first checkpoint with what followed it.
  compact();
  auto nodes = store::fold_surface(log());
  BOOST_REQUIRE_EQUAL(nodes.size(), 5u);  // checkpoint, four, answer, five, answer
  BOOST_TEST(store::string_at(log()[nodes[0]].at("data").at("source").as_object(), "plugin") == "compact");
  const auto& summary_req = provider.requests.back();
  BOOST_TEST(summary_req.messages[1].text == checkpoint);
}

BOOST_FIXTURE_TEST_CASE(failure_and_cancel_leave_the_surface_unchanged, CompactFixture45fc) {
  prompt("one");
  prompt("two");
  prompt("three");
  auto surface = store::fold_surface(log());
  provider.summary_error = true;
  auto failed = compact();
  BOOST_TEST((failed.kind == engine::CompactResult::Kind::failed));
  BOOST_TEST(failed.message == "summariser down");
  auto all = log();
  BOOST_TEST((types({all.end() - 4, all.end()}) ==
              std::vector<std::string>{"turn/start", "compact/start", "compact/end", "turn/end"}));
  BOOST_TEST(without_time(all[all.size() - 2]) == R"({"type":"compact/end","seq":37,"data":{"turn":4,"error":"summariser down"}})");
  BOOST_TEST(store::fold_surface(all) == surface);
  provider.summary_error = false;
  // A failure after part of the summary streamed is a failure too, even without a message.
  provider.summary_cut = true;
  failed = compact();
  BOOST_TEST((failed.kind == engine::CompactResult::Kind::failed));
  BOOST_TEST(failed.message == "the summary request failed");
  all = log();
  BOOST_TEST((types({all.end() - 4, all.end()}) ==
              std::vector<std::string>{"turn/start", "compact/start", "compact/end", "turn/end"}));
  BOOST_TEST(store::fold_surface(all) == surface);
  provider.summary_cut = false;

  provider.hang_summary = true;
  std::optional<engine::CompactResult> cancelled;
  auto scenario = [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, p->engine.compact(session->id, "", recorder),
                   [&](std::exception_ptr, engine::CompactResult r) { cancelled = r; });
    while (provider.waiting == 0) co_await asio::post(ex, asio::use_awaitable);
    p->engine.cancel(session->id);
  };
  run(scenario());
  BOOST_REQUIRE(cancelled);
  BOOST_TEST((cancelled->kind == engine::CompactResult::Kind::cancelled));
  all = log();
  BOOST_TEST(without_time(all[all.size() - 2]) == R"({"type":"compact/end","seq":45,"data":{"turn":6,"error":"cancelled"}})");
  BOOST_TEST(json::serialize(all.back().at("data").at("reason")) == R"({"kind":"aborted"})");
  BOOST_TEST(store::fold_surface(all) == surface);
  BOOST_TEST(recorder.compactions.empty());
  // The session goes on with its whole conversation.
  provider.hang_summary = false;
  prompt("four");
  BOOST_TEST(provider.requests.back().messages.size() == 8u);
}

BOOST_FIXTURE_TEST_CASE(too_little_to_condense_writes_nothing, CompactFixture) {
  prompt("one");
  prompt("two");
  auto size = log().size();
  auto result = compact();
  BOOST_TEST((result.kind == engine::CompactResult::Kind::skipped));
  BOOST_TEST(result.message == "the conversation has fewer than 3 user turns");
  BOOST_TEST(log().size() == size);
  // Right after a compaction only the checkpoint would be condensed again: skipped as well.
  prompt("three");
  BOOST_TEST((compact().kind == engine::CompactResult::Kind::compacted));
  size = log().size();
  auto again = compact();
  BOOST_TEST((again.kind == engine::CompactResult::Kind::skipped));
  BOOST_TEST(again.message == "nothing before the last 2 user turns is left to condense");
  BOOST_TEST(log().size() == size);
  // The number of kept user turns is configurable.
  config.compact_keep_turns = 1;
  BOOST_TEST((compact().kind == engine::CompactResult::Kind::compacted));
  BOOST_TEST(store::fold_surface(log()).size() == 3u);  // checkpoint, three, answer
}

BOOST_FIXTURE_TEST_CASE(automatic_compaction_keeps_requests_under_the_window, CompactFixture) {
  config.context_windows["m1"] = 1000;  // threshold 0.8 * (1000 - 125) = 700 tokens
  const std::string big(600, 'x');       // 204 tokens a message
  std::size_t compactions = 0;
  for (int turn = 1; turn <= 10; ++turn) {
    recorder.order.clear();
    prompt(big + std::to_string(turn));
    if (!recorder.compactions.empty() && recorder.compactions.size() != compactions) {
      compactions = recorder.compactions.size();
      // The card comes before the answer.
      BOOST_TEST(recorder.order.front() == "compacted");
    }
  }
  BOOST_TEST(compactions >= 2u);
  for (const auto& r : provider.requests) {
    BOOST_TEST(llm::estimate_request_tokens(r.messages) <= 1000);
    if (r.purpose == llm::Purpose::answer) BOOST_TEST(llm::estimate_request_tokens(r.messages) <= 875);
  }
  // Turn 4 compacted first: its records sit between the user message and step/start.
  auto all = log();
  std::vector<std::string> turn4;
  bool in = false;
  for (const auto& e : all) {
    if (store::string_at(e, "type") == "turn/start") in = e.at("data").at("turn").as_int64() == 4;
    if (in && turn4.size() < 7) turn4.emplace_back(store::string_at(e, "type"));
  }
  BOOST_TEST((turn4 == std::vector<std::string>{"turn/start", "user/message", "compact/start", "compact/summary",
                                               "user/message", "compact/end", "step/start"}));
  store::fold_surface(all);  // valid
}

BOOST_FIXTURE_TEST_CASE(no_window_or_compact_at_zero_never_compacts_automatically, CompactFixture) {
  const std::string big(3000, 'y');
  for (int turn = 1; turn <= 4; ++turn) prompt(big);
  config.context_windows["m1"] = 1000;
  config.compact_at = 0;
  prompt(big);
  BOOST_TEST(recorder.compactions.empty());
  for (const auto& r : provider.requests) BOOST_TEST((r.purpose == llm::Purpose::answer));
}

BOOST_FIXTURE_TEST_CASE(context_too_long_compacts_once_and_retries_once, CompactFixture) {
  prompt("one");
  prompt("two");
  provider.too_long = 1;
  prompt("three");
  BOOST_REQUIRE_EQUAL(recorder.compactions.size(), 1u);
  auto last = texts(provider.requests.back());
  BOOST_TEST(last.size() == 5u);  // system, checkpoint, two, answer, three
  BOOST_TEST(last[1].find("<compacted-summary>") != std::string::npos);
  BOOST_TEST(store::string_at(last_of(log(), "turn/end").at("data").at("reason").as_object(), "kind") == "completed");
  // Still too long after compacting: a clear error naming the window and the estimate.
  prompt("four");
  prompt("five");
  provider.too_long = 2;
  BOOST_CHECK_EXCEPTION(prompt("six"), llm::ProviderError, [](const llm::ProviderError& e) {
    std::string m = e.what();
    return m.find("window of m1 not configured") != std::string::npos && m.find("estimated at") != std::string::npos &&
           e.code() == "PROVIDER_BAD_REQUEST";
  });
  auto all = log();
  BOOST_TEST(store::string_at(last_of(all, "turn/end").at("data").at("reason").as_object(), "kind") == "error");
  store::fold_surface(all);
}

BOOST_FIXTURE_TEST_CASE(context_windows_configured_published_or_none, Fixture) {
  auto p = process();
  BOOST_TEST(!p->engine.context_window("m1"));  // an unknown model: no window, no automatic compaction
  BOOST_TEST(*p->engine.context_window("deepseek-flash") == 1000000);
  BOOST_TEST(*p->engine.context_window("deepseek-v4-pro") == 1000000);
  BOOST_TEST(*p->engine.context_window("deepseek-chat") == 131072);
  config.context_windows["m1"] = 8192;
  config.context_windows["deepseek-flash"] = 65536;  // configured wins over published
  BOOST_TEST(*p->engine.context_window("m1") == 8192);
  BOOST_TEST(*p->engine.context_window("deepseek-flash") == 65536);
}

BOOST_AUTO_TEST_CASE(token_estimate_bounds) {
  // ASCII: between a quarter (real tokenizers on English) and a third of the bytes, rounded up.
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 100u, 4096u, 100001u}) {
    std::string text(n, 'a');
    auto t = llm::estimate_text_tokens(text);
    BOOST_TEST(t * 4 >= static_cast<std::int64_t>(n));
    BOOST_TEST(t * 3 >= static_cast<std::int64_t>(n));
    BOOST_TEST(t * 3 < static_cast<std::int64_t>(n) + 3);
  }
  // CJK: at least one token per character (3 UTF-8 bytes each).
  std::string cjk;
  for (int i = 0; i < 100; ++i) cjk += "\u6F22";
  BOOST_TEST(llm::estimate_text_tokens(cjk) >= 100);
  // A request: each message plus 4, plus 3.
  BOOST_TEST(llm::estimate_request_tokens({{llm::Role::system, "abc"}, {llm::Role::user, "abcd"}}) == 3 + (1 + 4) + (2 + 4));
  // Tool calls (id, name, arguments) and a tool message's call id count, plus 4 a call.
  BOOST_TEST(llm::estimate_message_tokens({llm::Role::assistant, "", {{"id", "nm", "abcdef"}}}) == 4 + 4 + 4);
  BOOST_TEST(llm::estimate_message_tokens({llm::Role::tool, "abc", {}, "xyz"}) == 2 + 4);
  // The answer reserve and the threshold.
  BOOST_TEST(llm::answer_reserve(1000) == 125);
  BOOST_TEST(llm::answer_reserve(1000000) == 8192);
  BOOST_TEST(*llm::compaction_threshold(1000, 0.8) == 700);
  BOOST_TEST(*llm::compaction_threshold(1000000, 0.8) == 793446);
  BOOST_TEST(!llm::compaction_threshold(std::nullopt, 0.8));
  BOOST_TEST(!llm::compaction_threshold(1000, 0));
  BOOST_TEST(llm::names_context_too_long("This model's maximum context length is 8192 tokens"));
  BOOST_TEST(llm::names_context_too_long("error: context_length_exceeded"));
  BOOST_TEST(!llm::names_context_too_long("Invalid API key"));
}

BOOST_AUTO_TEST_SUITE_END()
