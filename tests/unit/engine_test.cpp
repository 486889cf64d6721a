// In-process tests of the session engine (src/engine) with a scripted fake provider and a real store
// in a temporary directory: durability of session/new, conversation assembly from the log, refusal,
// early cancel, cancellation joining the turn, close during a prompt, the model's request/header.
#include "engine_fixture.hpp"
#include "engine/engine.hpp"
#include "handlers/store_source.hpp"
#include "llm/token_estimate.hpp"
#include "refs/service.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "support/config.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>

using namespace acp;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;

using namespace engine_fixture;

BOOST_AUTO_TEST_SUITE(session_engine)

BOOST_FIXTURE_TEST_CASE(new_session_is_durable_and_loads_in_another_process, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/work/p", {}));
  // Another process sees it at once: listed (no title), found for load, an empty log.
  auto b = process();
  auto rows = run(b->engine.list(store::ListQuery{}));
  BOOST_REQUIRE_EQUAL(rows.size(), 1u);
  BOOST_TEST(rows[0].header.id == session->id);
  BOOST_TEST(!rows[0].title);
  auto header = run(b->engine.find_stored(session->id, "/work/p/"));
  BOOST_TEST(header.header.id == session->id);
  BOOST_TEST(events(*b, session->id).empty());
  // The first prompt goes to the existing header-only log.
  b->engine.attach(header, std::nullopt, "", "");
  Recorder r;
  BOOST_TEST((run(b->engine.prompt(session->id, {"first words here", {}}, r)) == llm::StopKind::end_turn));
  BOOST_TEST(r.text == "hello there");
  BOOST_TEST(r.titles == std::vector<std::string>{"first words here"});
  BOOST_TEST(events(*b, session->id).front().at("seq").as_int64() == 0);
}

BOOST_FIXTURE_TEST_CASE(bad_cwd_is_invalid_input_with_its_path, Fixture) {
  auto a = process();
  BOOST_CHECK_EXCEPTION(run(a->engine.create_session("relative", {})), engine::InvalidInput,
                        [](const engine::InvalidInput& e) { return e.path() == "/cwd"; });
  BOOST_CHECK_EXCEPTION(run(a->engine.create_session("/ok", {"/a", "b"})), engine::InvalidInput,
                        [](const engine::InvalidInput& e) { return e.path() == "/additionalDirectories/1"; });
  BOOST_CHECK_THROW(run(a->engine.find_stored("nope", "/ok")), engine::SessionNotFound);
  for (std::string bad : {std::string("/a\nb"), std::string("/a\rb"), std::string("/a\0b", 4)})
    BOOST_CHECK_EXCEPTION(run(a->engine.create_session(bad, {})), engine::InvalidInput,
                          [](const engine::InvalidInput& e) { return e.path() == "/cwd"; });
}

BOOST_FIXTURE_TEST_CASE(conversation_comes_from_the_log_across_processes, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  Recorder r;
  run(a->engine.prompt(session->id, {"one", {}}, r));
  // Another process appends a turn to the same session.
  auto b = process();
  b->engine.attach(run(b->engine.find_stored(session->id, "/w")), std::nullopt, "", "");
  provider.answer = {"second answer"};
  run(b->engine.prompt(session->id, {"two", {}}, r));
  provider.answer = {"x"};
  run(a->engine.prompt(session->id, {"three", {}}, r));
  const auto& m = provider.requests.back().messages;
  BOOST_REQUIRE_EQUAL(m.size(), 6u);
  BOOST_TEST(m[0].text == "system /w");
  BOOST_TEST(m[1].text == "one");
  BOOST_TEST(m[2].text == "hello there");
  BOOST_TEST(m[3].text == "two");
  BOOST_TEST(m[4].text == "second answer");
  BOOST_TEST(m[5].text == "three");
  // Seqs stay contiguous across both writers.
  auto all = events(*a, session->id);
  for (std::size_t i = 0; i < all.size(); ++i) BOOST_TEST(all[i].at("seq").as_int64() == std::int64_t(i));
}

BOOST_FIXTURE_TEST_CASE(refused_turn_leaves_later_requests_also_after_reload, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  Recorder r;
  run(a->engine.prompt(session->id, {"fine question", {}}, r));
  provider.stop = llm::StopKind::refusal;
  provider.answer = {"I will not"};
  BOOST_TEST((run(a->engine.prompt(session->id, {"forbidden question", {}}, r)) == llm::StopKind::refusal));
  auto log = events(*a, session->id);
  // Logged as the original: an error finish, no assistant/message, turn/end error CONTENT_FILTER
  // (0.1.1's error reason has no step; it reads back with the failure as the 45fc one).
  const auto& end = last_of(log, "turn/end");
  BOOST_TEST(json::serialize(end.at("data").at("reason")) ==
             (generation == store::Generation::flat
                  ? R"j({"kind":"error","step":1,"failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}})j"
                  : R"j({"kind":"error","failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}})j"));
  BOOST_TEST(store::string_at(last_of(log, "assistant/message").at("data").at("content").as_array()[0].as_object(),
                              "text") == "hello there");
  const auto& finish = last_of(log, "assistant/chunk");
  BOOST_TEST(json::serialize(finish.at("data").at("chunk")) ==
             R"j({"type":"finish","reason":{"kind":"error","failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}})j");
  provider.stop = llm::StopKind::end_turn;
  run(a->engine.prompt(session->id, {"next", {}}, r));
  auto texts = [&] {
    std::vector<std::string> out;
    for (const auto& m : provider.requests.back().messages) out.push_back(m.text);
    return out;
  };
  BOOST_TEST((texts() == std::vector<std::string>{"system /w", "fine question", "hello there", "next"}));
  // A new process derives the same conversation from the log.
  auto b = process();
  b->engine.attach(run(b->engine.find_stored(session->id, "/w")), std::nullopt, "", "");
  run(b->engine.prompt(session->id, {"after reload", {}}, r));
  auto after_reload = texts();
  BOOST_TEST((after_reload == std::vector<std::string>{"system /w", "fine question", "hello there", "next", "I will not",
                                                       "after reload"}),
             [&] {
               std::string all;
               for (const auto& t : after_reload) all += "[" + t + "]";
               return all;
             }());
}

BOOST_FIXTURE_TEST_CASE(cancel_before_any_output_still_logs_the_message, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  Recorder r;
  llm::StopKind stop{};
  // Coroutine lambdas live in named locals: their frames refer to the closure objects.
  auto prompt = [&]() -> asio::awaitable<void> {
    engine::PromptInput input{"cancelled early", {}};
    stop = co_await a->engine.prompt(session->id, input, r);
  };
  auto prompt_then_cancel = [&]() -> asio::awaitable<void> {
    // The cancel arrives right behind the prompt, before the turn wrote anything.
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, prompt(), asio::detached);
    // The cancel comes as soon as the turn exists, before it has written anything.
    while (!session->turn) co_await asio::post(ex, asio::use_awaitable);
    a->engine.cancel(session->id);
    co_return;
  };
  run(prompt_then_cancel());
  BOOST_TEST((stop == llm::StopKind::cancelled));
  BOOST_TEST(provider.requests.empty());
  auto log = events(*a, session->id);
  auto kinds = types(log);
  std::string all;
  for (const auto& k : kinds) all += k + " ";
  // (The fake provider offers models, so the first request's model is logged after step/start.)
  BOOST_TEST((kinds == std::vector<std::string>{"turn/start", "user/message", "session/title", "step/start",
                                                "request/header", "step/end", "turn/end"}),
             all);
  BOOST_TEST(json::serialize(last_of(log, "turn/end").at("data").at("reason")) == aborted_reason());
  BOOST_TEST(!session->turn);
}

BOOST_FIXTURE_TEST_CASE(close_during_a_prompt_waits_for_the_cancelled_turn, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  provider.hang = true;
  Recorder r;
  std::vector<std::string> order;
  auto prompt = [&]() -> asio::awaitable<void> {
    engine::PromptInput input{"long", {}};
    auto stop = co_await a->engine.prompt(session->id, input, r);
    order.push_back(stop == llm::StopKind::cancelled ? "prompt cancelled" : "prompt other");
  };
  auto scenario = [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, prompt(), asio::detached);
    while (provider.waiting == 0) co_await asio::post(ex, asio::use_awaitable);
    co_await a->engine.close(session->id);
    order.push_back("closed");
  };
  run(scenario());
  BOOST_TEST((order == std::vector<std::string>{"prompt cancelled", "closed"}));
  BOOST_TEST(!a->engine.find(session->id));
  BOOST_TEST(json::serialize(last_of(events(*a, session->id), "turn/end").at("data").at("reason")) == aborted_reason());
  BOOST_TEST(provider.waiting == 0);
}

BOOST_FIXTURE_TEST_CASE(model_choice_is_logged_once_and_restored, Fixture) {
  config.provider = "deepseek";
  FakeProvider deepseek("deepseek");
  auto a = std::make_unique<Process>(root, config, deepseek, io, pool, generation);
  auto session = run(a->engine.create_session("/w", {}));
  BOOST_TEST((a->engine.model_choices(*session) == std::vector<std::string>{"m1", "m2"}));
  Recorder r;
  run(a->engine.prompt(session->id, {"q1", {}}, r));
  run(a->engine.prompt(session->id, {"q2", {}}, r));
  a->engine.set_model(*session, "m2");
  BOOST_CHECK_THROW(a->engine.set_model(*session, "nope"), engine::InvalidInput);
  run(a->engine.prompt(session->id, {"q3", {}}, r));
  BOOST_TEST(deepseek.requests.back().model == "m2");
  std::vector<std::string> headers;
  for (const auto& e : events(*a, session->id))
    if (store::string_at(e, "type") == "request/header") headers.push_back(json::serialize(e.at("data")));
  BOOST_TEST((headers == std::vector<std::string>{
                  R"({"header":{"config":{"provider":"deepseek","model":"m1"}},"reason":"initial"})",
                  R"({"header":{"config":{"provider":"deepseek","model":"m2"}},"reason":"change"})"}));
  // Another process restores m2 from the log; another provider's names are ignored.
  auto b = std::make_unique<Process>(root, config, deepseek, io, pool, generation);
  auto header = run(b->engine.find_stored(session->id, "/w"));
  auto [provider_name, model] = run(b->engine.read_log(session->id, nullptr));
  auto restored = b->engine.attach(header, std::nullopt, provider_name, model);
  BOOST_TEST(b->engine.session_model(*restored) == "m2");
  auto c = std::make_unique<Process>(root, config, deepseek, io, pool, generation);
  auto other = c->engine.attach(header, std::nullopt, "openai", "gpt-x");
  BOOST_TEST(c->engine.session_model(*other) == "m1");
}

// usage_update's numbers (issue 28): each answered model call reports what it took and how full the
// context is after it — the provider's count when it gave one (the reasoning left out of the
// context: the next request does not carry it back), our estimate when it gave none.
BOOST_FIXTURE_TEST_CASE(each_model_call_reports_usage_and_the_context_it_leaves, Fixture) {
  config.context_windows["m1"] = 50000;
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  provider.thought = "let me think";
  provider.usage = llm::Usage{1200, 300, 1000, 120};
  Recorder counted;
  run(a->engine.prompt(session->id, {"first", {}}, counted));
  BOOST_REQUIRE_EQUAL(counted.calls.size(), 1u);
  const engine::ModelCallUsage& c = counted.calls[0];
  BOOST_TEST(!c.estimated);
  BOOST_TEST(c.usage.input_tokens == 1200);
  BOOST_TEST(c.usage.output_tokens == 300);
  BOOST_TEST(c.usage.cached_input_tokens.value_or(-1) == 1000);
  BOOST_TEST(c.context_used == 1200 + 300 - 120);
  BOOST_TEST(c.context_window.value_or(0) == 50000);

  // A provider without a count, or with a stand-in (the echo model's bytes): our estimate of the
  // request the provider got and of the answer ("hello there": 11 bytes, 4 tokens, plus 4 for the
  // message; the 12 bytes of reasoning: 4 more output tokens, not in the context).
  for (const std::optional<llm::Usage>& reported :
       {std::optional<llm::Usage>(), std::optional<llm::Usage>(llm::Usage{999, 999, std::nullopt, std::nullopt, true})}) {
    provider.usage = reported;
    Recorder estimated;
    run(a->engine.prompt(session->id, {"again", {}}, estimated));
    BOOST_REQUIRE_EQUAL(estimated.calls.size(), 1u);
    const engine::ModelCallUsage& e = estimated.calls[0];
    const llm::Request& sent = provider.requests.back();
    const std::int64_t input = llm::estimate_request_tokens(sent.messages) + llm::estimate_tools_tokens(sent.tools);
    BOOST_TEST(e.estimated);
    BOOST_TEST(e.usage.input_tokens == input);
    BOOST_TEST(e.usage.output_tokens == 4 + 4 + 4);
    BOOST_TEST(e.usage.reasoning_tokens.value_or(-1) == 4);
    BOOST_TEST(e.context_used == input + 8);
    BOOST_TEST(e.context_window.value_or(0) == 50000);
  }

  // A model without a known window reports none; a cancelled call reports nothing.
  config.context_windows.clear();
  Recorder unknown;
  run(a->engine.prompt(session->id, {"three", {}}, unknown));
  BOOST_REQUIRE_EQUAL(unknown.calls.size(), 1u);
  BOOST_TEST(!unknown.calls[0].context_window);
  provider.hang = true;
  Recorder cancelled;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    while (provider.waiting == 0) co_await asio::post(io, asio::use_awaitable);
    a->engine.cancel(session->id);
  }, asio::detached);
  BOOST_TEST((run(a->engine.prompt(session->id, {"four", {}}, cancelled)) == llm::StopKind::cancelled));
  BOOST_TEST(cancelled.calls.empty());
}

BOOST_AUTO_TEST_SUITE_END()
