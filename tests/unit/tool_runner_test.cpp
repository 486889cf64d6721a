// The tool runner: arguments checked, paths confined, work done in the server (real files and
// processes) or through the editor (a scripted client holding unsaved buffers and terminals).
#include "../common/temp_dir.hpp"
#include "engine/tool_runner.hpp"
#include "support/utf8.hpp"
#include "run_coroutine.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace acp;
using engine::ToolOutcome;

namespace {

struct Dir {
  acp::test::TempDir tmp{"dsh-runner"};
  fs::path root{tmp.path()};
  void put(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary) << text;
  }
  std::string get(const std::string& rel) const {
    std::ifstream in(root / rel, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

// An editor that keeps files in memory (its unsaved buffers) and runs "terminals" by script; it
// records what it was asked, by the ACP method each request stands for.
struct FakeEditor final : engine::Editor {
  std::map<std::string, std::string> buffers;
  std::vector<std::string> methods;
  bool terminal_exits = true;  ///< wait_for_exit answers at once; else never
  bool refuses_reads = false;  ///< fs/read_text_file fails (a permission error, say) for every file
  bool answers_cleanup = true; ///< terminal/kill, output and release answer; else never (until cancelled)
  std::string terminal_output_text = "built\n";

  bool reads_files() const override { return true; }
  bool writes_files() const override { return true; }
  bool runs_commands() const override { return true; }

  asio::awaitable<std::string> read_text_file(std::string path) override {
    methods.push_back("fs/read_text_file");
    if (refuses_reads) throw engine::EditorCallError("EACCES", false);
    auto it = buffers.find(path);
    if (it == buffers.end()) throw engine::EditorCallError("file not found", false);
    co_return it->second;
  }
  asio::awaitable<void> write_text_file(std::string path, std::string content) override {
    methods.push_back("fs/write_text_file");
    buffers[path] = std::move(content);
    co_return;
  }
  asio::awaitable<std::string> create_terminal(std::string, std::string, std::size_t) override {
    methods.push_back("terminal/create");
    co_return "term-1";
  }
  asio::awaitable<engine::TerminalExit> wait_for_terminal_exit(std::string) override {
    methods.push_back("terminal/wait_for_exit");
    if (!terminal_exits) {
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));  // ends when the call is cancelled
      throw engine::EditorCallError("cancelled", true);
    }
    co_return engine::TerminalExit{2, std::nullopt};
  }
  asio::awaitable<void> never_answer() {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));  // ends when the call is cancelled
    throw engine::EditorCallError("cancelled", true);
  }
  asio::awaitable<engine::TerminalOutput> terminal_output(std::string) override {
    methods.push_back("terminal/output");
    if (!answers_cleanup) co_await never_answer();
    engine::TerminalOutput out{terminal_output_text, std::nullopt};
    if (terminal_exits) out.exit = engine::TerminalExit{2, std::nullopt};
    co_return out;
  }
  asio::awaitable<void> kill_terminal(std::string) override {
    methods.push_back("terminal/kill");
    if (!answers_cleanup) co_await never_answer();
  }
  asio::awaitable<void> release_terminal(std::string) override {
    methods.push_back("terminal/release");
    if (!answers_cleanup) co_await never_answer();
  }

  /// This editor, not owned (it lives on the test's stack, longer than the runner).
  std::shared_ptr<engine::Editor> access() { return std::shared_ptr<engine::Editor>(std::shared_ptr<void>(), this); }
};

struct Rig {
  asio::io_context io;
  asio::thread_pool pool{1};
  ~Rig() { pool.join(); }
  ToolOutcome run(engine::ToolRunner& runner, std::string tool, std::string args,
                  std::optional<std::chrono::milliseconds> cancel_after = {}) {
    return run_coroutine(io, runner.run(std::move(tool), std::move(args)), cancel_after);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(tool_runner)

BOOST_AUTO_TEST_CASE(server_side_tools_work_on_real_files) {
  Dir d;
  d.put("src/a.cpp", "int main() {\n  return 1;\n}\n");
  Rig rig;
  engine::ToolRunner runner(tools::Roots(d.root.string()), {}, rig.pool.get_executor());
  auto read = rig.run(runner, "read", R"({"file_path":"src/a.cpp","offset":2,"limit":1})");
  BOOST_TEST(!read.is_error);
  BOOST_TEST(read.text.find("2:   return 1;") != std::string::npos, read.text);
  auto edit = rig.run(runner, "edit", R"({"file_path":"src/a.cpp","old_string":"return 1;","new_string":"return 0;"})");
  BOOST_TEST(edit.text == "Edited src/a.cpp: 1 replacement.");
  BOOST_REQUIRE(edit.edit.has_value());
  BOOST_TEST(edit.edit->old_text.value_or("").find("return 1;") != std::string::npos);
  BOOST_TEST(d.get("src/a.cpp") == "int main() {\n  return 0;\n}\n");
  auto write = rig.run(runner, "write", R"({"file_path":"notes/new.md","content":"# hi\n"})");
  BOOST_TEST(write.text == "Created notes/new.md (5 bytes).");
  BOOST_TEST(!write.edit->old_text.has_value());
  BOOST_TEST(d.get("notes/new.md") == "# hi\n");
  BOOST_TEST(rig.run(runner, "glob", R"({"pattern":"*.md"})").text == "notes/new.md");
  BOOST_TEST(rig.run(runner, "grep", R"({"pattern":"return","include":"*.cpp"})").text == "src/a.cpp\n  2:   return 0;");
  auto bash = rig.run(runner, "bash", R"({"command":"ls src; exit 4","description":"list"})");
  BOOST_TEST(bash.text == "a.cpp\n[exit code: 4]");
  auto todo = rig.run(runner, "todo_write",
                      R"({"todos":[{"content":"a","status":"pending"},{"content":"b","status":"in_progress"},{"content":"c","status":"completed"}]})");
  BOOST_TEST(todo.text == "Updated todo list: 1 pending, 1 in progress, 1 completed.");
  BOOST_TEST(todo.todos->size() == 3u);
}

// How a command in the server ended, for its card: ACP's terminal exit status (an exit code, or a
// signal by name) and the timeout that killed it.
BOOST_AUTO_TEST_CASE(server_side_commands_say_how_they_ended) {
  Dir d;
  Rig rig;
  engine::ToolRunner runner(tools::Roots(d.root.string()), {}, rig.pool.get_executor());
  auto failed = rig.run(runner, "bash", R"({"command":"exit 4"})");
  BOOST_REQUIRE(failed.command_exit.has_value());
  BOOST_TEST(failed.command_exit->exit_code.value_or(-1) == 4);
  BOOST_TEST(!failed.is_error);  // the model reads "[exit code: 4]" as a result, as before
  auto ok = rig.run(runner, "bash", R"({"command":"true"})");
  BOOST_REQUIRE(ok.command_exit.has_value());
  BOOST_TEST(ok.command_exit->exit_code.value_or(-1) == 0);
  auto killed = rig.run(runner, "bash", R"({"command":"kill -TERM $$"})");
  BOOST_REQUIRE(killed.command_exit.has_value());
  BOOST_TEST(!killed.command_exit->exit_code.has_value());
  BOOST_TEST(killed.command_exit->signal.value_or("") == "SIGTERM");
  BOOST_TEST(killed.text == "[killed by signal 15]");
  auto late = rig.run(runner, "bash", R"({"command":"sleep 1000","timeoutMs":50})");
  BOOST_REQUIRE(late.command_exit.has_value());
  BOOST_TEST((late.command_exit->timed_out == std::chrono::milliseconds(50)));
  BOOST_TEST(late.is_error);
  // A call that never ran a command has no end to tell.
  BOOST_TEST(!rig.run(runner, "bash", R"({"command":5})").command_exit.has_value());
  BOOST_TEST(!rig.run(runner, "read", R"({"file_path":"nothing"})").command_exit.has_value());
}

BOOST_AUTO_TEST_CASE(bad_calls_are_error_results_for_the_model) {
  Dir d;
  Rig rig;
  engine::ToolRunner runner(tools::Roots(d.root.string()), {}, rig.pool.get_executor());
  auto expect = [&](std::string tool, std::string args, std::string text) {
    auto r = rig.run(runner, tool, args);
    BOOST_TEST(r.is_error, tool << " " << args);
    BOOST_TEST(r.text.find(text) != std::string::npos, r.text);
  };
  expect("read", "{not json", "Error: the arguments are not valid JSON");
  expect("read", "[1]", "must be a JSON object");
  expect("read", "{}", "`file_path` is required");
  expect("read", R"({"file_path":7})", "`file_path` must be a string");
  expect("read", R"({"file_path":"x","offset":1.5})", "`offset` must be an integer");
  expect("read", R"({"file_path":"../etc/passwd"})", "outside the session's directories");
  expect("write", R"({"file_path":"/etc/x","content":"x"})", "outside the session's directories");
  expect("edit", R"({"file_path":"missing.txt","old_string":"a","new_string":"b"})", "does not exist");
  expect("bash", R"({"command":"true","timeoutMs":999999999})", "`timeoutMs` must be an integer from 1 to 600000");
  expect("frobnicate", "{}", "there is no tool named \"frobnicate\"");
  expect("todo_write", R"({"todos":[{"content":"","status":"pending"}]})", "invalid todo: `content` must be a non-empty string");
  expect("todo_write", R"({"todos":[{"content":"a","status":"pending"},{"content":"a","status":"completed"}]})",
         "invalid todos: duplicate content \"a\"");
  expect("todo_write", R"({"todos":[{"content":"a","status":"done"}]})", "`status` must be pending, in_progress or completed");
}

BOOST_AUTO_TEST_CASE(results_are_capped_head_and_tail) {
  Dir d;
  Rig rig;
  engine::ToolLimits limits;
  limits.max_result_bytes = 200;
  engine::ToolRunner runner(tools::Roots(d.root.string()), {}, rig.pool.get_executor(), limits);
  auto r = rig.run(runner, "bash", R"({"command":"seq 1 10000","description":"count"})");
  BOOST_TEST(r.text.size() < 300u);
  BOOST_TEST(r.text.substr(0, 2) == "1\n");
  BOOST_TEST(r.text.find("bytes omitted") != std::string::npos);
  BOOST_TEST(r.text.find("10000") != std::string::npos);
}

// An editor that cannot read a file that is on disk has failed; it has not shown the file is
// absent: write must not report an overwrite as a creation, edit must not send the model to write.
BOOST_AUTO_TEST_CASE(an_editor_that_cannot_read_an_existing_file_stops_the_change) {
  Dir d;
  d.put("a.txt", "on disk\n");
  Rig rig;
  FakeEditor editor;
  editor.refuses_reads = true;
  engine::ToolRunner runner(tools::Roots(d.root.string()), editor.access(), rig.pool.get_executor());
  for (const char* args : {R"({"file_path":"a.txt","content":"new"})", R"({"file_path":"a.txt","old_string":"on","new_string":"off"})"}) {
    auto r = rig.run(runner, std::string(args).find("old_string") == std::string::npos ? "write" : "edit", args);
    BOOST_TEST(r.is_error, args);
    BOOST_TEST(r.text.find("the editor could not read \"a.txt\": EACCES") != std::string::npos, r.text);
    BOOST_TEST(!r.edit.has_value());
  }
  auto read = rig.run(runner, "read", R"({"file_path":"a.txt"})");
  BOOST_TEST(read.text.find("the editor could not read") != std::string::npos, read.text);
  BOOST_TEST((std::find(editor.methods.begin(), editor.methods.end(), "fs/write_text_file") == editor.methods.end()));
  BOOST_TEST(d.get("a.txt") == "on disk\n");
  // A file that is on no disk and in no buffer is still "no such file" (write creates it).
  auto created = rig.run(runner, "write", R"({"file_path":"new.txt","content":"x"})");
  BOOST_TEST(!created.is_error, created.text);
  BOOST_TEST(editor.buffers[(d.root / "new.txt").string()] == "x");
}

BOOST_AUTO_TEST_CASE(files_go_through_the_editor_when_it_can) {
  Dir d;
  d.put("a.txt", "on disk\n");
  Rig rig;
  FakeEditor editor;
  const std::string a = (d.root / "a.txt").string();
  editor.buffers[a] = "unsaved buffer\nsecond\n";
  engine::ToolRunner runner(tools::Roots(d.root.string()), editor.access(), rig.pool.get_executor());
  // read sees the unsaved buffer, not the disk.
  BOOST_TEST(rig.run(runner, "read", R"({"file_path":"a.txt"})").text.find("1: unsaved buffer") != std::string::npos);
  auto edit = rig.run(runner, "edit", R"({"file_path":"a.txt","old_string":"second","new_string":"2nd"})");
  BOOST_TEST(!edit.is_error, edit.text);
  BOOST_TEST(editor.buffers[a] == "unsaved buffer\n2nd\n");
  BOOST_TEST(d.get("a.txt") == "on disk\n");  // the editor writes, not the server
  auto write = rig.run(runner, "write", R"({"file_path":"b.txt","content":"new"})");
  BOOST_TEST(editor.buffers[(d.root / "b.txt").string()] == "new");
  BOOST_TEST(!write.edit->old_text.has_value());
  // Confinement holds before the editor is asked anything.
  std::size_t asked = editor.methods.size();
  BOOST_TEST(rig.run(runner, "read", R"({"file_path":"/etc/hostname"})").is_error);
  BOOST_TEST(editor.methods.size() == asked);
}

BOOST_AUTO_TEST_CASE(a_directory_is_never_sent_to_the_editor_as_a_file) {
  Dir d;
  d.put("src/a.txt", "a\n");
  Rig rig;
  FakeEditor editor;
  engine::ToolRunner runner(tools::Roots(d.root.string()), editor.access(), rig.pool.get_executor());
  for (std::string call : {R"(write {"file_path":".","content":"x"})", R"(write {"file_path":"src","content":"x"})",
                           R"(write {"file_path":"new/","content":"x"})",
                           R"(edit {"file_path":".","old_string":"a","new_string":"b"})",
                           R"(edit {"file_path":"src/","old_string":"a","new_string":"b"})", R"(read {"file_path":"."})",
                           R"(read {"file_path":"src"})"}) {
    const auto space = call.find(' ');
    auto r = rig.run(runner, call.substr(0, space), call.substr(space + 1));
    BOOST_TEST(r.is_error, call);
    BOOST_TEST(r.text.find("is a directory") != std::string::npos, r.text);
  }
  BOOST_TEST(editor.methods.empty(), "asked: " << editor.methods.size());
  BOOST_TEST(editor.buffers.empty());
}

BOOST_AUTO_TEST_CASE(commands_run_in_the_editors_terminal_and_are_always_released) {
  Dir d;
  Rig rig;
  FakeEditor editor;
  engine::ToolRunner runner(tools::Roots(d.root.string()), editor.access(), rig.pool.get_executor());
  auto r = rig.run(runner, "bash", R"({"command":"make","description":"build"})");
  BOOST_TEST(r.terminal_id.value_or("") == "term-1");
  BOOST_TEST(r.text == "built\n[exit code: 2]");
  BOOST_REQUIRE(r.command_exit.has_value());  // for the card: it exited 2
  BOOST_TEST(r.command_exit->exit_code.value_or(-1) == 2);
  BOOST_TEST(!r.command_exit->signal.has_value());
  BOOST_TEST(!r.command_exit->timed_out.has_value());
  BOOST_TEST(editor.methods == (std::vector<std::string>{"terminal/create", "terminal/wait_for_exit", "terminal/output",
                                                         "terminal/release"}),
             boost::test_tools::per_element());
  // A command that never exits: the timeout kills it, then its output is read and it is released.
  editor.methods.clear();
  editor.terminal_exits = false;
  auto late = rig.run(runner, "bash", R"({"command":"sleep 1000","description":"wait","timeoutMs":100})");
  BOOST_TEST(late.text.find("[timed out after 100 ms: the command was killed]") != std::string::npos, late.text);
  BOOST_TEST(late.is_error);  // it did not finish: the card fails
  BOOST_REQUIRE(late.command_exit.has_value());
  BOOST_TEST((late.command_exit->timed_out == std::chrono::milliseconds(100)));
  BOOST_TEST(editor.methods == (std::vector<std::string>{"terminal/create", "terminal/wait_for_exit", "terminal/kill",
                                                         "terminal/output", "terminal/release"}),
             boost::test_tools::per_element());
  // Cancelled mid-command: killed and released all the same.
  editor.methods.clear();
  auto cancelled = rig.run(runner, "bash", R"({"command":"sleep 1000","description":"wait"})", std::chrono::milliseconds(100));
  BOOST_TEST(cancelled.cancelled);
  BOOST_TEST(editor.methods.back() == "terminal/release");
  BOOST_TEST((std::find(editor.methods.begin(), editor.methods.end(), "terminal/kill") != editor.methods.end()));
}

// A client that never answers the clean-up calls after a cancel (kill, output, release) must not
// hold the prompt's answer: each is awaited for the grace only, then the call ends cancelled.
BOOST_AUTO_TEST_CASE(a_client_that_never_answers_the_clean_up_calls_does_not_hold_a_cancel) {
  Dir d;
  Rig rig;
  FakeEditor editor;
  editor.terminal_exits = false;
  editor.answers_cleanup = false;
  engine::ToolLimits limits;
  limits.cleanup_grace = std::chrono::milliseconds(20);
  engine::ToolRunner runner(tools::Roots(d.root.string()), editor.access(), rig.pool.get_executor(), limits);
  auto r = rig.run(runner, "bash", R"({"command":"sleep 1000","description":"wait"})", std::chrono::milliseconds(50));
  BOOST_TEST(r.cancelled);
  BOOST_TEST(r.text.find("[cancelled: the command was killed]") != std::string::npos, r.text);
  BOOST_TEST(editor.methods == (std::vector<std::string>{"terminal/create", "terminal/wait_for_exit", "terminal/kill",
                                                         "terminal/output", "terminal/release"}),
             boost::test_tools::per_element());
  // The same after a timeout.
  editor.methods.clear();
  auto late = rig.run(runner, "bash", R"({"command":"sleep 1000","description":"wait","timeoutMs":30})");
  BOOST_TEST(late.is_error);
  BOOST_TEST(editor.methods.back() == "terminal/release");
}

// Issue 27: one byte that is not UTF-8 in a result made every frame and log line holding it
// unreadable. Whatever a command prints, a file holds or a file is named, the model, the log and
// the client get text: each bad sequence as U+FFFD (EF BF BD); the files themselves are untouched.
BOOST_AUTO_TEST_CASE(results_are_text_whatever_the_bytes) {
  const std::string fffd = "\xEF\xBF\xBD";
  Dir d;
  d.put("latin1.txt", "caf\xE9 au lait\n");
  d.put("n\xE4me.txt", "plain\n");
  Rig rig;
  engine::ToolRunner runner(tools::Roots(d.root.string()), {}, rig.pool.get_executor());
  auto expect_text = [&](const std::string& tool, const std::string& args, const std::string& want) {
    auto r = rig.run(runner, tool, args);
    BOOST_TEST(support::valid_utf8(r.text), tool << " " << args << ": " << r.text);
    BOOST_TEST(r.text.find(want) != std::string::npos, tool << ": " << r.text);
    return r;
  };
  expect_text("bash", R"({"command":"printf 'A\\377B'"})", "A" + fffd + "B");
  expect_text("bash", R"({"command":"printf 'x\\377' >&2; exit 3"})", "x" + fffd);
  expect_text("grep", R"({"pattern":"au lait"})", "caf" + fffd + " au lait");
  expect_text("glob", R"({"pattern":"*.txt"})", "n" + fffd + "me.txt");
  expect_text("read", R"({"file_path":"latin1.txt"})", "caf" + fffd + " au lait");
  auto edit = expect_text("edit", R"({"file_path":"latin1.txt","old_string":"lait","new_string":"the"})", "Edited");
  BOOST_REQUIRE(edit.edit.has_value());
  BOOST_TEST(edit.edit->old_text.value_or("") == "caf" + fffd + " au lait\n");
  BOOST_TEST(edit.edit->new_text == "caf" + fffd + " au the\n");
  BOOST_TEST(d.get("latin1.txt") == "caf\xE9 au the\n");  // the file keeps its own bytes
  // A cut result is text too: replacement first, then the cap on code-point boundaries.
  engine::ToolLimits limits;
  limits.max_result_bytes = 100;
  engine::ToolRunner capped(tools::Roots(d.root.string()), {}, rig.pool.get_executor(), limits);
  auto many = rig.run(capped, "bash", R"({"command":"head -c 1000 /dev/zero | tr '\\0' '\\377'"})");
  BOOST_TEST(support::valid_utf8(many.text));
  BOOST_TEST(many.text.find("bytes omitted") != std::string::npos, many.text);
}

BOOST_AUTO_TEST_SUITE_END()

// Issue 27's swap: a directory inside the root and a symlink to a directory outside are exchanged
// (renameat2 RENAME_EXCHANGE) over and over by another thread while reads, writes, greps and globs
// run through the tool layer. Whatever the interleaving, no call may show the outside file's text
// or name, and nothing may be created outside. (Resolution by name leaked most reads.) The verdict
// does not depend on timing: every call is checked, and the loop ends on counts, not on a clock.
BOOST_AUTO_TEST_SUITE(tool_confinement_race)

namespace {

void swap_race(tools::Resolution how) {
  Dir d;
  const fs::path work = d.root / "work", outside = d.root / "outside";
  fs::create_directories(work / "d");
  fs::create_directories(outside);
  d.put("work/d/f.txt", "inside\n");
  d.put("outside/f.txt", "OUTSIDE SECRET\n");
  d.put("outside/only-outside.txt", "OUTSIDE SECRET\n");
  fs::create_directory_symlink(outside, work / "s");
  constexpr int kMinSwaps = 1000, kMinRounds = 1000;
  std::atomic<int> swaps{0};
  std::atomic<bool> done{false};
  std::atomic<int> swap_errors{0};
  std::thread swapper([&] {
    const std::string a = (work / "d").string(), b = (work / "s").string();
    while (!done.load() || swaps.load() < kMinSwaps) {
      if (::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) ++swap_errors;
      ++swaps;
    }
  });
  Rig rig;
  engine::ToolRunner runner(tools::Roots(work.string(), {}, how), {}, rig.pool.get_executor());
  int leaks = 0, reads_ok = 0, writes_ok = 0;
  std::set<std::string> written;
  for (int round = 0; round < kMinRounds || swaps.load() < kMinSwaps; ++round) {
    auto leaked = [&](const ToolOutcome& r) { return r.text.find("OUTSIDE") != std::string::npos || r.text.find("only-outside") != std::string::npos; };
    auto read = rig.run(runner, "read", R"({"file_path":"d/f.txt"})");
    if (leaked(read)) ++leaks;
    if (!read.is_error) {
      ++reads_ok;
      BOOST_TEST(read.text.find("1: inside") != std::string::npos, read.text);
    }
    const std::string name = "new-" + std::to_string(round) + ".txt";
    auto write = rig.run(runner, "write", R"({"file_path":"d/)" + name + R"(","content":"w"})");
    if (!write.is_error) {
      ++writes_ok;
      written.insert(name);
    }
    // Matches only the outside file: an edit that reached it would change it (checked below).
    auto edit = rig.run(runner, "edit", R"({"file_path":"d/f.txt","old_string":"SECRET","new_string":"CHANGED"})");
    if (leaked(edit)) ++leaks;
    if (leaked(rig.run(runner, "grep", R"({"pattern":"SECRET|inside","path":"d"})"))) ++leaks;
    if (leaked(rig.run(runner, "grep", R"({"pattern":"SECRET|inside"})"))) ++leaks;
    if (leaked(rig.run(runner, "glob", R"({"pattern":"*","path":"d"})"))) ++leaks;
    if (leaked(rig.run(runner, "glob", R"({"pattern":"**/*.txt"})"))) ++leaks;
  }
  done = true;
  swapper.join();
  BOOST_TEST(swap_errors.load() == 0);
  BOOST_TEST(swaps.load() >= kMinSwaps);
  BOOST_TEST(leaks == 0);
  std::set<std::string> outside_now;
  for (const auto& e : fs::directory_iterator(outside)) outside_now.insert(e.path().filename().string());
  BOOST_TEST(outside_now == (std::set<std::string>{"f.txt", "only-outside.txt"}), boost::test_tools::per_element());
  BOOST_TEST(d.get("outside/f.txt") == "OUTSIDE SECRET\n");
  // Every write that succeeded landed in the real directory, under whichever name it has now.
  const fs::path real = fs::is_symlink(work / "d") ? work / "s" : work / "d";
  for (const auto& name : written) BOOST_TEST(fs::exists(real / name), name);
  BOOST_TEST_MESSAGE("swaps " << swaps.load() << ", reads " << reads_ok << ", writes " << writes_ok);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_swapped_symlink_never_leads_out_through_openat2) { swap_race(tools::Resolution::automatic); }

BOOST_AUTO_TEST_CASE(a_swapped_symlink_never_leads_out_through_the_component_walk) {
  swap_race(tools::Resolution::component_walk);
}

BOOST_AUTO_TEST_SUITE_END()
