// MCP servers of a session: a real server built with the official MCP TypeScript SDK
// (tests/e2e/lib/mcp-test-server.mjs, Node) and a fake that misbehaves on purpose
// (tests/tools/mcp_fake_server.py): tools listed and called, results as text, cancellation,
// crashes, refusal to start, and a stop that leaves no process behind.
#include "mcp/server.hpp"
#include "process_gone.hpp"
#include "support/log.hpp"
#include "run_coroutine.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

#include <unistd.h>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace acp;

namespace {

template <class T>
T run(asio::io_context& io, asio::awaitable<T> task, std::optional<std::chrono::milliseconds> cancel_after = {}) {
  return run_coroutine(io, std::move(task), cancel_after);
}

void stop(asio::io_context& io, mcp::Server& server) {
  run(io, [](mcp::Server& s) -> asio::awaitable<int> {
    co_await s.stop();
    co_return 0;
  }(server));
}

mcp::ServerSpec sdk_server() {
  mcp::ServerSpec spec;
  spec.name = "test";
  spec.command = "node";
  spec.args = {DSH_TEST_MCP_SERVER};
  spec.cwd = std::filesystem::temp_directory_path().string();
  return spec;
}

mcp::ServerSpec fake_server(const std::string& mode, const std::vector<std::string>& extra = {}) {
  mcp::ServerSpec spec;
  spec.name = "fake";
  spec.command = "python3";
  spec.args = {DSH_TEST_MCP_FAKE, mode};
  spec.args.insert(spec.args.end(), extra.begin(), extra.end());
  // Short for the server that never answers (the limit is what is tested); no limit a loaded
  // machine could reach for the others, which answer (the test waits for that).
  spec.start_timeout = mode == "silent" ? std::chrono::milliseconds(500) : std::chrono::hours(1);
  return spec;
}

// The process log, written to a file of the test's for its lifetime (tests run without one).
struct LogFile {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("dsh-mcp-log-" + std::to_string(::getpid()));
  int fd;
  LogFile() {
    std::filesystem::remove(path);
    fd = log::init(path.string(), log::Level::info);
  }
  ~LogFile() {
    log::init("/dev/null", log::Level::info);  // not a regular file: logging off again, as before
    ::close(fd);
    std::filesystem::remove(path);
  }
  std::uintmax_t size() const { return std::filesystem::file_size(path); }
  std::size_t lines_with(const std::string& text) const {
    std::ifstream in(path);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }
  std::size_t longest_line() const {
    std::ifstream in(path);
    std::size_t most = 0;
    for (std::string line; std::getline(in, line);) most = std::max(most, line.size());
    return most;
  }
};

mcp::CallResult call(asio::io_context& io, mcp::Server& s, std::string tool, json::object args,
                     std::optional<std::chrono::milliseconds> cancel_after = {}) {
  return run(io, s.call_tool(std::move(tool), std::move(args)), cancel_after);
}

std::string start_failure(asio::io_context& io, mcp::ServerSpec spec) {
  try {
    run(io, mcp::Server::start(io.get_executor(), std::move(spec)));
  } catch (const mcp::ServerFailure& e) {
    return e.what();
  }
  return "(started)";
}

} // namespace

BOOST_AUTO_TEST_SUITE(mcp_servers)

BOOST_AUTO_TEST_CASE(tools_of_a_real_server_are_listed_and_called) {
  asio::io_context io;
  ::setenv("DSH_MCP_TEST_HIDDEN", "secret", 1);
  auto spec = sdk_server();
  spec.hidden_env = {"DSH_MCP_TEST_HIDDEN"};
  spec.env = {{"DSH_MCP_TEST_GIVEN", "given"}};
  auto server = run(io, mcp::Server::start(io.get_executor(), spec));
  BOOST_TEST(server->protocol_version() == mcp::kProtocolVersions[0]);
  std::vector<std::string> names;
  for (const auto& t : server->tools()) names.push_back(t.name);
  for (std::string want : {"echo", "add", "slow", "picture", "fail", "crash", "env", "cwd"})
    BOOST_TEST((std::find(names.begin(), names.end(), want) != names.end()), want);
  BOOST_TEST(server->tools().front().input_schema.find("\"properties\"") != std::string::npos);

  BOOST_TEST(call(io, *server, "echo", {{"text", "hi"}}).text == "echo: hi");
  BOOST_TEST(call(io, *server, "add", {{"a", 2}, {"b", 3}}).text == "5");
  auto picture = call(io, *server, "picture", {});
  BOOST_TEST(picture.text == "a pixel:\n[image image/png, about 70 bytes, not shown]");
  auto failed = call(io, *server, "fail", {});
  BOOST_TEST(failed.is_error);
  BOOST_TEST(failed.text == "it failed");
  auto wrong = call(io, *server, "add", {{"a", "two"}});
  BOOST_TEST(wrong.is_error);
  auto unknown = call(io, *server, "nope", {});
  BOOST_TEST(unknown.is_error);
  BOOST_TEST(call(io, *server, "env", {{"name", "DSH_MCP_TEST_HIDDEN"}}).text == "(unset)");
  BOOST_TEST(call(io, *server, "env", {{"name", "DSH_MCP_TEST_GIVEN"}}).text == "given");
  BOOST_TEST(call(io, *server, "cwd", {}).text == spec.cwd);
  long pid = server->pid();
  stop(io, *server);
  BOOST_TEST(!server->running());
  BOOST_TEST(gone(pid));
  ::unsetenv("DSH_MCP_TEST_HIDDEN");
}

BOOST_AUTO_TEST_CASE(a_cancelled_call_is_withdrawn_and_the_server_stays) {
  asio::io_context io;
  auto server = run(io, mcp::Server::start(io.get_executor(), sdk_server()));
  bool cancelled = false;
  try {
    call(io, *server, "slow", {{"ms", 3600000}}, std::chrono::milliseconds(200));
  } catch (const mcp::CallCancelled&) {
    cancelled = true;
  }
  BOOST_TEST(cancelled);
  BOOST_TEST(server->running());
  // The server heard notifications/cancelled (its handler saw the abort) and still answers.
  BOOST_TEST(call(io, *server, "echo", {{"text", "still here"}}).text == "echo: still here");
  BOOST_TEST(server->stderr_tail().find("slow: cancelled") != std::string::npos);
  stop(io, *server);
}

BOOST_AUTO_TEST_CASE(a_crash_fails_the_call_in_flight_and_withdraws_the_tools) {
  asio::io_context io;
  auto server = run(io, mcp::Server::start(io.get_executor(), sdk_server()));
  std::string why;
  try {
    call(io, *server, "crash", {});
  } catch (const mcp::ServerFailure& e) {
    why = e.what();
  }
  BOOST_TEST(why.find("MCP server \"test\"") == 0u);
  BOOST_TEST(why.find("exited with status 3") != std::string::npos, why);
  BOOST_TEST(why.find("crashing now") != std::string::npos, why);
  BOOST_TEST(!server->running());
  BOOST_TEST(server->tools().empty());
  BOOST_CHECK_THROW(call(io, *server, "echo", {{"text", "x"}}), mcp::ServerFailure);
  stop(io, *server);
}

BOOST_AUTO_TEST_CASE(servers_that_cannot_serve_are_refused_with_a_reason) {
  asio::io_context io;
  std::string silent = start_failure(io, fake_server("silent"));
  BOOST_TEST(silent.find("did not answer initialize in time") != std::string::npos, silent);
  std::string version = start_failure(io, fake_server("badversion"));
  BOOST_TEST(version.find("\"1999-01-01\"") != std::string::npos, version);
  std::string dies = start_failure(io, fake_server("dies"));
  BOOST_TEST(dies.find("exited with status 7") != std::string::npos, dies);
  BOOST_TEST(dies.find("fatal: no configuration found") != std::string::npos, dies);
  auto missing = fake_server("silent");
  missing.command = "/nonexistent/mcp-server";
  BOOST_TEST(start_failure(io, missing).find("could not be started") != std::string::npos);
  // Lines on stdout that are not JSON-RPC are logged and skipped, not fatal.
  auto noisy = run(io, mcp::Server::start(io.get_executor(), fake_server("noisy")));
  BOOST_TEST(call(io, *noisy, "ok", {}).text == "fine");
  stop(io, *noisy);
}

BOOST_AUTO_TEST_CASE(results_read_as_text) {
  auto r = mcp::result_text(json::parse(R"({"content":[{"type":"text","text":"a"},
      {"type":"resource","resource":{"uri":"file:///x","text":"inside"}},
      {"type":"resource","resource":{"uri":"file:///bin","blob":"AAAA"}},
      {"type":"resource_link","uri":"file:///y","name":"y"},
      {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
      {"type":"hologram"}],"isError":true})").as_object());
  BOOST_TEST(r.is_error);
  BOOST_TEST(r.text == "a\ninside\n[resource file:///bin]\n[resource link file:///y (y)]\n[audio audio/wav, about 3 bytes, not shown]\n"
                       "[hologram content, not shown]");
  BOOST_TEST(mcp::result_text(json::parse(R"({"content":[],"structuredContent":{"n":1}})").as_object()).text == R"({"n":1})");
}

// A server that lists 1,000 tools a page and always has another page: listing stops at the
// first kMaxTools, one log line says how many were left out.
BOOST_AUTO_TEST_CASE(a_server_listing_tools_forever_is_read_for_at_most_kmaxtools) {
  asio::io_context io;
  LogFile log;
  auto server = run(io, mcp::Server::start(io.get_executor(), fake_server("many", {"1000"})));
  BOOST_TEST(server->tools().size() == mcp::kMaxTools);
  BOOST_TEST(server->tools().back().name == "t0_" + std::to_string(mcp::kMaxTools - 1));
  BOOST_TEST(log.lines_with("left out") == 1u);
  BOOST_TEST(log.lines_with("not read past page 1; 872 listed tool(s) left out, 128 kept") == 1u);
  stop(io, *server);
}

// One tool a page in 1 MiB answers, pages forever: reading stops after kMaxListingBytes, not
// after kMaxToolPages pages (100 MiB).
BOOST_AUTO_TEST_CASE(tools_list_answers_are_read_up_to_a_byte_bound) {
  asio::io_context io;
  auto server = run(io, mcp::Server::start(io.get_executor(), fake_server("heavy")));
  BOOST_TEST(server->tools().size() >= 1u);
  BOOST_TEST(server->tools().size() <= (mcp::kMaxListingBytes >> 20) + 1);
  BOOST_TEST(server->running());
  stop(io, *server);
}

// The call that is never answered ends with an error result naming the server once its time
// limit passes; the server was sent notifications/cancelled for it and goes on serving.
BOOST_AUTO_TEST_CASE(a_call_past_its_time_limit_is_cancelled_with_an_error_result) {
  asio::io_context io;
  auto spec = fake_server("hangs");
  spec.call_timeout = std::chrono::milliseconds(200);
  auto server = run(io, mcp::Server::start(io.get_executor(), spec));
  auto late = call(io, *server, "hang", {});
  BOOST_TEST(late.is_error);
  BOOST_TEST(late.text == "MCP server \"fake\" did not answer hang within 200 ms (--mcp-call-timeout-ms); the call was "
                          "cancelled", late.text);
  BOOST_TEST(server->running());
  // Read in order: the cancellation came before this call (ids: initialize 1, tools/list 2, the call 3).
  BOOST_TEST(call(io, *server, "cancelled", {}).text == "[3]");
  stop(io, *server);
}

// 100 notifications/message of 1 MiB, then 1,000 of 2 KiB: each large one is logged cut, and the
// server's share of the log ends at kMaxLogBytes with one line saying so.
BOOST_AUTO_TEST_CASE(what_a_server_logs_is_cut_and_capped) {
  asio::io_context io;
  LogFile log;
  auto server = run(io, mcp::Server::start(io.get_executor(), fake_server("chatty")));
  auto before = log.size();
  BOOST_TEST(call(io, *server, "ok", {}).text == "fine");  // answered after its messages
  auto grown = log.size() - before;
  // (Each record's time, pid and level add a few dozen bytes to what the server's budget counts.)
  BOOST_TEST(grown <= mcp::kMaxLogBytes + (64u << 10), grown);
  BOOST_TEST(grown >= mcp::kMaxLogBytes - 2 * mcp::kMaxLogLineBytes, grown);
  BOOST_TEST(log.lines_with("bytes, cut)") == 100u);
  BOOST_TEST(log.longest_line() <= mcp::kMaxLogLineBytes + 100);  // the record's time, pid and level
  BOOST_TEST(log.lines_with("its further messages are dropped") == 1u);
  stop(io, *server);
}

BOOST_AUTO_TEST_CASE(http_servers_that_cannot_be_reached_are_refused_with_a_reason) {
  asio::io_context io;
  // A port nothing listens on: one bound and closed again.
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string port = std::to_string(acceptor.local_endpoint().port());
  acceptor.close();
  for (auto transport : {mcp::Transport::http, mcp::Transport::sse}) {
    mcp::ServerSpec spec;
    spec.name = "down";
    spec.transport = transport;
    spec.url = "http://127.0.0.1:" + port + "/mcp";
    try {
      run(io, mcp::Server::start(io.get_executor(), spec));
      BOOST_FAIL("a server nobody serves started");
    } catch (const mcp::ServerFailure& e) {
      std::string want = "MCP server \"down\" could not be reached at " + spec.url + ": cannot connect to 127.0.0.1:" + port;
      BOOST_TEST(std::string(e.what()).find(want) == 0u, e.what());
    }
  }
  BOOST_TEST(mcp::url_problem("https://mcp.example/mcp?x=1").empty());
  BOOST_TEST(mcp::url_problem("ftp://mcp.example/").find("expected http:// or https://") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
