// The turn runner in process (src/engine/turn_runner.cpp): the tool loop against a scripted model
// and a real directory (calls logged in the harness's shapes, results sent back, permissions and
// modes, the step limit, result caps, bad calls as error results, cancel while a command runs),
// and the holes issue 16 names: a cancel while /compact waits for the lock or before it re-reads
// is not lost, and a log that stops taking writes mid-turn stops the model stream.
#include "engine_fixture.hpp"
#include "engine/permission_log.hpp"
#include "tools/catalog.hpp"
#include "../common/proc_locks.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>

#include <sys/resource.h>
#include <unistd.h>

using namespace engine_fixture;

namespace {

// Records the tool records and answers permission questions from a script.
struct ToolRecorder final : engine::TurnObserver {
  void references(std::int64_t, const json::object&) override {}
  void title(const std::string&) override {}
  void delta(const llm::Delta& d) override { text += d.text; }
  void tool_record(const json::object& r) override { records.emplace_back(store::string_at(r, "type")); }
  void tool_running(const std::string& id, const std::optional<std::string>&) override { running.push_back(id); }
  asio::awaitable<engine::PermissionAnswer> ask_permission(const engine::PermissionQuestion& q) override {
    questions.push_back(q.tool + " " + q.arguments);
    if (answers.empty()) co_return engine::PermissionAnswer::reject_once;
    engine::PermissionAnswer a = answers.front();
    answers.erase(answers.begin());
    co_return a;
  }
  std::vector<engine::PermissionAnswer> answers;
  std::vector<std::string> questions, records, running;
  std::string text;
};

llm::ToolCall call(std::string id, std::string name, std::string args) {
  return llm::ToolCall{std::move(id), std::move(name), std::move(args)};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using acp::test::blocked_flocks_here;

std::vector<const json::object*> all_of(const std::vector<json::object>& events, std::string_view type) {
  std::vector<const json::object*> out;
  for (const auto& e : events)
    if (store::string_at(e, "type") == type) out.push_back(&e);
  return out;
}

const json::object& data_of(const json::object& e) { return e.at("data").as_object(); }

struct ToolFixture : Fixture {
  ToolFixture() {
    cwd = fs::path(root) / "work";
    fs::create_directories(cwd);
  }
  /// Runs a prompt and cancels it once `ready()` holds (looked at every few milliseconds); returns
  /// how the prompt ended.
  llm::StopKind prompt_cancelled_when(Process& p, const std::string& id, const std::string& text,
                                      engine::TurnObserver& observer, const std::function<bool()>& ready) {
    std::optional<llm::StopKind> stop;
    asio::co_spawn(io, p.engine.prompt(id, {text, {}}, observer), [&](std::exception_ptr e, llm::StopKind k) {
      BOOST_TEST(!e);
      stop = k;
    });
    asio::steady_timer poll(io);
    std::function<void()> check = [&] {
      if (ready()) return p.engine.cancel(id);
      poll.expires_after(std::chrono::milliseconds(2));
      poll.async_wait([&](boost::system::error_code) { check(); });
    };
    check();
    io.restart();
    io.run();
    BOOST_REQUIRE(stop);
    return *stop;
  }
  /// A session with four turns (something for /compact to condense); the model's requests forgotten.
  std::shared_ptr<engine::Session> session_worth_compacting(Process& p, engine::TurnObserver& observer) {
    auto session = run(p.engine.create_session(cwd.string(), {}));
    for (const char* words : {"one", "two", "three", "four"}) run(p.engine.prompt(session->id, {words, {}}, observer));
    provider.requests.clear();
    return session;
  }
  fs::path cwd;
};

} // namespace

BOOST_AUTO_TEST_SUITE(turn_runner)

BOOST_FIXTURE_TEST_CASE(a_read_is_logged_answered_and_sent_back, ToolFixture) {
  std::ofstream(cwd / "notes.txt") << "alpha\nbeta\n";
  provider.tool_steps.push_back({call("c1", "read", R"({"file_path":"notes.txt"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  BOOST_TEST((run(p->engine.prompt(session->id, {"look", {}}, r)) == llm::StopKind::end_turn));
  BOOST_TEST(r.questions.empty());  // reads are free in `ask`
  // Two requests: the second carries the call and its result, paired as OpenAI wants.
  BOOST_REQUIRE_EQUAL(provider.requests.size(), 2u);
  BOOST_TEST(provider.requests[0].tools.size() == tools::builtin_tools().size());
  const auto& sent = provider.requests[1].messages;
  BOOST_REQUIRE_GE(sent.size(), 4u);
  BOOST_TEST(sent[sent.size() - 2].tool_calls.size() == 1u);
  BOOST_TEST(sent[sent.size() - 2].tool_calls[0].arguments == R"({"file_path":"notes.txt"})");
  BOOST_TEST((sent.back().role == llm::Role::tool));
  BOOST_TEST(sent.back().tool_call_id == "c1");
  BOOST_TEST(sent.back().text.find("1: alpha") != std::string::npos);
  // The log in the harness's order, the step closed before the next opens.
  auto log = events(*p, session->id);
  std::vector<std::string> shape;
  for (const auto& t : types(log))
    if (t != "assistant/chunk") shape.push_back(t);
  // (request/header: the fake provider offers models, so the first request names its model.)
  std::vector<std::string> expected{"turn/start", "user/message", "session/title", "step/start", "request/header", "assistant/message",
                                    "tool/call", "tool/result", "step/end", "step/start", "assistant/message",
                                    "step/end", "turn/end"};
  BOOST_TEST(shape == expected, boost::test_tools::per_element());
  const auto& message = data_of(*all_of(log, "assistant/message").front());
  const auto& block = message.at("content").as_array().back().as_object();
  BOOST_TEST(store::string_at(block, "type") == "tool-call");
  BOOST_TEST(store::string_at(block, "arguments") == R"({"file_path":"notes.txt"})");
  const auto& result = *all_of(log, "tool/result").front();
  BOOST_TEST(result.at("sourceEventSeqs").as_array().at(0).as_int64() ==
             all_of(log, "tool/call").front()->at("seq").as_int64());
  BOOST_TEST(data_of(*all_of(log, "step/start").back()).at("step").as_int64() == 2);
  // The chunks of the call, as the harness streams them.
  bool delta_seen = false;
  for (const auto* e : all_of(log, "assistant/chunk")) {
    const auto& chunk = data_of(*e).at("chunk").as_object();
    if (store::string_at(chunk, "type") == "tool-call-delta") {
      delta_seen = true;
      BOOST_TEST(store::string_at(chunk, "id") == "c1");
      BOOST_TEST(store::string_at(chunk, "name") == "read");
    }
    if (store::string_at(chunk, "type") == "finish" && data_of(*e).at("step").as_int64() == 1)
      BOOST_TEST(store::string_at(chunk.at("reason").as_object(), "kind") == "tool-calls");
  }
  BOOST_TEST(delta_seen);
  BOOST_TEST((r.records == std::vector<std::string>{"tool/call", "tool/result"}));
  // Another process derives the same conversation from the log.
  auto q = process();
  q->engine.attach(run(q->engine.find_stored(session->id, cwd.string())), std::nullopt, "", "");
  provider.requests.clear();
  run(q->engine.prompt(session->id, {"again", {}}, r));
  const auto& again = provider.requests.at(0).messages;
  BOOST_TEST(std::any_of(again.begin(), again.end(), [](const llm::Message& m) { return m.tool_call_id == "c1"; }));
}

BOOST_FIXTURE_TEST_CASE(writes_ask_first_and_a_rejection_leaves_the_file_alone, ToolFixture) {
  std::ofstream(cwd / "a.txt") << "one\n";
  provider.tool_steps.push_back({call("w1", "edit", R"({"file_path":"a.txt","old_string":"one","new_string":"two"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  r.answers = {engine::PermissionAnswer::reject_once};
  BOOST_TEST((run(p->engine.prompt(session->id, {"change it", {}}, r)) == llm::StopKind::end_turn));
  BOOST_REQUIRE_EQUAL(r.questions.size(), 1u);
  BOOST_TEST(read_file(cwd / "a.txt") == "one\n");
  auto log = events(*p, session->id);
  const auto& result = data_of(*all_of(log, "tool/result").front());
  BOOST_TEST(result.at("isError").as_bool());
  BOOST_TEST(data_of(*all_of(log, "approval/decided").front()).at("outcome").as_string() == "rejected");
  BOOST_TEST(r.running.empty());

  // Allowed always: the edit happens, shows its change, and the next edit is not asked.
  provider.tool_steps.push_back({call("w2", "edit", R"({"file_path":"a.txt","old_string":"one","new_string":"two"})")});
  provider.tool_steps.push_back({call("w3", "edit", R"({"file_path":"a.txt","old_string":"two","new_string":"three"})")});
  r.answers = {engine::PermissionAnswer::allow_always};
  run(p->engine.prompt(session->id, {"really", {}}, r));
  run(p->engine.prompt(session->id, {"and again", {}}, r));
  BOOST_TEST(r.questions.size() == 2u);
  BOOST_TEST(read_file(cwd / "a.txt") == "three\n");
  log = events(*p, session->id);
  const auto& done = data_of(*all_of(log, "tool/result").back());
  BOOST_TEST(!done.at("isError").as_bool());
  const auto& diff = done.at("meta").at("diffs").as_array().at(0).as_object();
  BOOST_TEST(store::string_at(diff, "oldText") == "two\n");
  BOOST_TEST(store::string_at(diff, "newText") == "three\n");
  BOOST_TEST(all_of(log, "approval/asked").size() == 2u);
  // The "always" is in the log, and another process's session knows it.
  BOOST_TEST(all_of(log, std::string(engine::kPermissionRuleEvent)).size() == 1u);
  auto q = process();
  auto header = run(q->engine.find_stored(session->id, cwd.string()));
  engine::Permissions restored;
  for (const auto& e : events(*q, session->id)) engine::restore_permission_rule(e, restored);
  BOOST_TEST((restored.check(engine::SessionMode::ask, "edit", engine::ToolEffect::changes_files) ==
              engine::PermissionNeed::allowed));
  (void)header;
}

BOOST_FIXTURE_TEST_CASE(read_only_refuses_without_asking_and_auto_never_asks, ToolFixture) {
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  session->mode = engine::SessionMode::read_only;
  provider.tool_steps.push_back({call("b1", "bash", R"({"command":"touch made"})")});
  run(p->engine.prompt(session->id, {"run", {}}, r));
  BOOST_TEST(r.questions.empty());
  BOOST_TEST(!fs::exists(cwd / "made"));
  auto log = events(*p, session->id);
  BOOST_TEST(std::string(data_of(*all_of(log, "tool/result").back()).at("content").as_array()[0].at("text").as_string())
                 .find("read-only") != std::string::npos);
  session->mode = engine::SessionMode::auto_approve;
  provider.tool_steps.push_back({call("b2", "bash", R"({"command":"touch made"})")});
  run(p->engine.prompt(session->id, {"run", {}}, r));
  BOOST_TEST(r.questions.empty());
  BOOST_TEST(fs::exists(cwd / "made"));
}

// A model's arguments holding an escaped unpaired surrogate (JavaScript writers produce them) are
// read as the tool runner reads them, with U+FFFD in its place: the permission check sees the
// command that runs, so the "always" it offers names that command and covers the same call again.
BOOST_FIXTURE_TEST_CASE(a_bash_call_with_an_unpaired_surrogate_is_read_as_the_tool_reads_it, ToolFixture) {
  const std::string args = R"({"command":"touch made-\ud800"})";
  provider.tool_steps.push_back({call("b1", "bash", args)});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  r.answers = {engine::PermissionAnswer::allow_always};
  run(p->engine.prompt(session->id, {"run", {}}, r));
  BOOST_TEST(r.questions.size() == 1u);
  BOOST_TEST(fs::exists(cwd / "made-\xEF\xBF\xBD"));
  auto log = events(*p, session->id);
  BOOST_REQUIRE_EQUAL(all_of(log, std::string(engine::kPermissionRuleEvent)).size(), 1u);
  BOOST_TEST(!data_of(*all_of(log, "tool/result").back()).at("isError").as_bool());
  // The same call again: the rule covers it, nothing is asked.
  fs::remove(cwd / "made-\xEF\xBF\xBD");
  provider.tool_steps.push_back({call("b2", "bash", args)});
  run(p->engine.prompt(session->id, {"again", {}}, r));
  BOOST_TEST(r.questions.size() == 1u);
  BOOST_TEST(fs::exists(cwd / "made-\xEF\xBF\xBD"));
}

BOOST_FIXTURE_TEST_CASE(bad_calls_are_error_results_and_the_turn_goes_on, ToolFixture) {
  provider.tool_steps.push_back({call("x1", "no_such_tool", "{}"), call("x2", "read", "{not json"),
                                 call("x3", "read", R"({"file_path":5})"), call("x4", "read", R"({"file_path":"/etc/passwd"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  BOOST_TEST((run(p->engine.prompt(session->id, {"try", {}}, r)) == llm::StopKind::end_turn));
  auto log = events(*p, session->id);
  auto results = all_of(log, "tool/result");
  BOOST_REQUIRE_EQUAL(results.size(), 4u);
  for (const auto* result : results) BOOST_TEST(data_of(*result).at("isError").as_bool());
  BOOST_TEST(store::string_at(data_of(*results[0]), "callId") == "x1");  // the model's order
  BOOST_TEST(store::string_at(data_of(*results[3]), "callId") == "x4");
  BOOST_TEST(provider.requests.size() == 2u);
}

BOOST_FIXTURE_TEST_CASE(the_step_limit_ends_the_turn_max_turn_requests, ToolFixture) {
  config.max_steps = 2;
  provider.keep_calling = true;
  for (int i = 0; i < 3; ++i) provider.tool_steps.push_back({call("g" + std::to_string(i), "glob", R"({"pattern":"*"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  BOOST_TEST((run(p->engine.prompt(session->id, {"loop", {}}, r)) == llm::StopKind::max_turn_requests));
  BOOST_TEST(provider.requests.size() == 2u);
  auto log = events(*p, session->id);
  BOOST_TEST(store::string_at(data_of(last_of(log, "turn/end")).at("reason").as_object(), "kind") == "blocked");
  BOOST_TEST(types(log).back() == "turn/end");
  BOOST_TEST(all_of(log, "step/end").size() == 2u);
}

BOOST_FIXTURE_TEST_CASE(large_results_are_cut_with_a_notice, ToolFixture) {
  config.max_tool_result_bytes = 2048;
  {
    std::ofstream big(cwd / "big.txt");
    for (int i = 0; i < 5000; ++i) big << "line " << i << " of a long file\n";
  }
  provider.tool_steps.push_back({call("c", "bash", R"({"command":"cat big.txt"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  session->mode = engine::SessionMode::auto_approve;
  ToolRecorder r;
  run(p->engine.prompt(session->id, {"cat", {}}, r));
  auto log = events(*p, session->id);
  std::string text(data_of(*all_of(log, "tool/result").back()).at("content").as_array()[0].at("text").as_string());
  BOOST_TEST(text.size() <= 2048u + 256u);
  BOOST_TEST(text.find("line 0 of") != std::string::npos);     // the head
  BOOST_TEST(text.find("line 4999 of") != std::string::npos);  // and the tail
}

BOOST_FIXTURE_TEST_CASE(cancel_while_a_command_runs_ends_the_turn_and_the_command, ToolFixture) {
  provider.tool_steps.push_back({call("s", "bash", R"({"command":"echo $$ > pid; sleep 30"})")});
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  session->mode = engine::SessionMode::auto_approve;
  ToolRecorder r;
  // Cancelled once the command is running (its pid file exists).
  const llm::StopKind stop = prompt_cancelled_when(*p, session->id, "wait", r, [&] {
    return fs::exists(cwd / "pid") && fs::file_size(cwd / "pid") > 0;
  });
  BOOST_TEST((stop == llm::StopKind::cancelled));
  auto log = events(*p, session->id);
  BOOST_TEST(data_of(last_of(log, "turn/end")).at("reason").as_object().at("kind").as_string() == "aborted");
  const auto& result = data_of(*all_of(log, "tool/result").back());
  BOOST_TEST(result.at("isError").as_bool());
  // The command's process group is gone.
  const int pid = std::stoi(read_file(cwd / "pid"));
  BOOST_TEST(::kill(pid, 0) != 0);
  BOOST_TEST(provider.requests.size() == 1u);  // no step after the cancel
}

BOOST_FIXTURE_TEST_CASE(a_cancel_before_compact_gets_the_lock_is_not_lost, ToolFixture) {
  auto p = process();
  ToolRecorder r;
  auto session = session_worth_compacting(*p, r);
  const auto before = events(*p, session->id).size();
  // Cancelled before the turn's coroutine first runs: the lock is free and the conversation known,
  // so nothing would wait — the cancel must still be honoured before any work.
  std::optional<engine::CompactResult> result;
  // (The arguments outlive the spawned coroutine: the engine takes them by reference.)
  const std::string no_focus;
  asio::co_spawn(io, p->engine.compact(session->id, no_focus, r), [&](std::exception_ptr e, engine::CompactResult c) {
    BOOST_TEST(!e);
    result = c;
  });
  asio::post(io, [&] { p->engine.cancel(session->id); });
  io.restart();
  io.run();
  BOOST_REQUIRE(result);
  BOOST_TEST((result->kind == engine::CompactResult::Kind::cancelled));
  BOOST_TEST(provider.requests.empty());  // no summary was asked for
  BOOST_TEST(events(*p, session->id).size() == before);
}

BOOST_FIXTURE_TEST_CASE(a_cancel_while_compact_waits_for_the_lock_ends_it_at_once, ToolFixture) {
  lock_timeout = std::chrono::hours(1);  // never reached: only the cancel can end the wait
  auto p = process();
  ToolRecorder r;
  auto session = session_worth_compacting(*p, r);
  const auto before = events(*p, session->id).size();
  // Another writer holds the session.
  auto other = process();
  store::LockWait no_wait{false, std::chrono::steady_clock::now(), {}};
  store::SessionWriter holder = other->store.get().open_or_create(session->header, no_wait);
  std::optional<engine::CompactResult> result;
  // (The arguments outlive the spawned coroutine: the engine takes them by reference.)
  const std::string no_focus;
  asio::co_spawn(io, p->engine.compact(session->id, no_focus, r), [&](std::exception_ptr e, engine::CompactResult c) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      BOOST_ERROR("compact threw: " << ex.what());
    }
    result = c;
  });
  // The cancel comes once compact waits inside flock() (the kernel lists the wait in /proc/locks):
  // the wait itself is interrupted, not the check before it.
  asio::steady_timer poll(io);
  std::function<void()> check = [&] {
    if (blocked_flocks_here() > 0) return p->engine.cancel(session->id);
    poll.expires_after(std::chrono::milliseconds(2));
    poll.async_wait([&](boost::system::error_code) { check(); });
  };
  check();
  io.restart();
  io.run();
  BOOST_REQUIRE(result);
  BOOST_TEST((result->kind == engine::CompactResult::Kind::cancelled));
  BOOST_TEST(provider.requests.empty());
  holder.release();
  BOOST_TEST(events(*p, session->id).size() == before);
}

BOOST_FIXTURE_TEST_CASE(a_log_that_stops_taking_writes_stops_the_model, ToolFixture) {
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  run(p->engine.prompt(session->id, {"first", {}}, r));
  // A long, paced answer; the log file may grow only a little more (writes then fail EFBIG).
  provider.answer.assign(20000, std::string(100, 'x') + " ");
  provider.paced = true;
  std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 256 * 1024;
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  bool failed = false;
  try {
    run(p->engine.prompt(session->id, {"write a lot", {}}, r));
  } catch (const std::exception& e) {
    failed = true;
    BOOST_TEST_MESSAGE("turn failed: " << e.what());
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, SIG_DFL);
  BOOST_TEST(failed);
  // The model was stopped soon after the first failed batch, not read to its end.
  BOOST_TEST(provider.paced_deltas < 20000);
  BOOST_TEST(!session->turn);
  // The session works again once the disk does: the next turn (any process) repairs and goes on.
  provider.paced = false;
  provider.answer = {"fine"};
  auto q = process();
  q->engine.attach(run(q->engine.find_stored(session->id, cwd.string())), std::nullopt, "", "");
  BOOST_TEST((run(q->engine.prompt(session->id, {"again", {}}, r)) == llm::StopKind::end_turn));
  auto log = events(*q, session->id);
  BOOST_TEST(types(log).back() == "turn/end");
}

BOOST_FIXTURE_TEST_CASE(a_model_change_is_logged_even_when_its_first_turn_is_cancelled_while_compacting, ToolFixture) {
  config.context_windows["m2"] = 1000;  // threshold 0.8 * (1000 - 125) = 700 tokens
  auto p = process();
  auto session = run(p->engine.create_session(cwd.string(), {}));
  ToolRecorder r;
  const std::string big(600, 'x');  // ~200 tokens a message
  for (int i = 0; i < 3; ++i) run(p->engine.prompt(session->id, {big, {}}, r));
  // The user picks m2; the next request would not fit, so the turn compacts first, and is cancelled there.
  p->engine.set_model(*session, "m2");
  provider.hang_summary = true;
  const llm::StopKind stop = prompt_cancelled_when(*p, session->id, big, r, [&] { return provider.waiting > 0; });
  BOOST_TEST((stop == llm::StopKind::cancelled));
  // The next turn (no compaction now) still names m2 in the log, so a reload restores it.
  provider.hang_summary = false;
  config.context_windows.erase("m2");
  run(p->engine.prompt(session->id, {"short", {}}, r));
  std::string logged_provider, logged_model;
  for (const auto& e : events(*p, session->id)) engine::note_request_header(e, logged_provider, logged_model);
  BOOST_TEST(logged_model == "m2");
}

BOOST_AUTO_TEST_SUITE_END()
