// A session's MCP servers as tools (engine::McpTools): started together, a broken one left out,
// names made valid function names, definitions with the servers' schemas, calls with their
// failures as error results, cancellation, a server that dies withdrawing its tools, and stops
// (also during start-up) that leave no process behind. Against the official TypeScript SDK server
// (tests/e2e/lib/mcp-test-server.mjs) and a fake that misbehaves (tests/tools/mcp_fake_server.py).
#include "engine/mcp_tools.hpp"
#include "tools/catalog.hpp"
#include "mcp/server.hpp"
#include "process_gone.hpp"
#include "run_coroutine.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace acp;
using engine::McpTools;
using engine::ToolOutcome;

namespace {

mcp::ServerSpec sdk_server(const std::string& name) {
  mcp::ServerSpec spec;
  spec.name = name;
  spec.command = "node";
  spec.args = {DSH_TEST_MCP_SERVER};
  spec.cwd = std::filesystem::temp_directory_path().string();
  spec.hidden_env = engine::provider_key_env();
  return spec;
}

// No start limit a loaded machine could reach: the servers that answer are waited for.
mcp::ServerSpec fake_server(const std::string& name, const std::string& mode,
                            std::chrono::milliseconds start_timeout = std::chrono::hours(1),
                            const std::vector<std::string>& extra = {}) {
  mcp::ServerSpec spec;
  spec.name = name;
  spec.command = "python3";
  spec.args = {DSH_TEST_MCP_FAKE, mode};
  spec.args.insert(spec.args.end(), extra.begin(), extra.end());
  spec.cwd = std::filesystem::temp_directory_path().string();
  spec.start_timeout = start_timeout;
  return spec;
}

std::shared_ptr<McpTools> started(asio::io_context& io, std::vector<mcp::ServerSpec> specs) {
  auto tools = std::make_shared<McpTools>();
  run_coroutine(io, [](std::shared_ptr<McpTools> t, asio::any_io_executor ex,
                       std::vector<mcp::ServerSpec> s) -> asio::awaitable<int> {
    co_await t->start(ex, std::move(s));
    co_return 0;
  }(tools, io.get_executor(), std::move(specs)));
  return tools;
}

ToolOutcome call(asio::io_context& io, McpTools& tools, std::string name, std::string args,
                 std::optional<std::chrono::milliseconds> cancel_after = {}) {
  return run_coroutine(io, tools.call(std::move(name), std::move(args)), cancel_after);
}

void stop(asio::io_context& io, McpTools& tools) {
  run_coroutine(io, [](McpTools& t) -> asio::awaitable<int> {
    co_await t.stop();
    co_return 0;
  }(tools));
}

std::vector<std::string> names(const McpTools& tools) {
  std::vector<std::string> out;
  for (const auto& d : tools.definitions()) out.push_back(d.name);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

} // namespace

BOOST_AUTO_TEST_SUITE(mcp_tools)

BOOST_AUTO_TEST_CASE(names_are_valid_function_names) {
  BOOST_TEST(engine::mcp_tool_name("files", "read_file") == "mcp__files__read_file");
  BOOST_TEST(engine::mcp_tool_name("my server.v2", "get/thing") == "mcp__my_server_v2__get_thing");
  BOOST_TEST(engine::mcp_tool_name("s", "é") == "mcp__s____");  // two UTF-8 bytes, two underscores
  std::string long_name = engine::mcp_tool_name(std::string(40, 'a'), std::string(40, 'b'));
  BOOST_TEST(long_name.size() == 64u);
  BOOST_TEST(long_name.starts_with("mcp__aaaa"));
}

BOOST_AUTO_TEST_CASE(servers_start_together_and_a_broken_one_is_left_out) {
  asio::io_context io;
  ::setenv("DEEPSEEK_API_KEY", "sk-must-not-leak", 1);
  auto tools = started(io, {sdk_server("test"), fake_server("broken", "dies"), fake_server("my server!", "noisy"),
                            fake_server("my server?", "noisy")});
  ::unsetenv("DEEPSEEK_API_KEY");
  BOOST_TEST(tools->servers() == 3u);
  auto n = names(*tools);
  for (std::string want : {"mcp__test__echo", "mcp__test__add", "mcp__test__slow", "mcp__my_server___ok",
                           "mcp__my_server___ok_2"})
    BOOST_TEST(has(n, want), want);
  BOOST_TEST(n.front() == "mcp__test__echo");  // server order, then the server's own order
  BOOST_TEST(n.back() == "mcp__my_server___ok_2");
  BOOST_TEST(!has(n, "mcp__broken__ok"));
  BOOST_TEST(tools->offers("mcp__test__echo"));
  BOOST_TEST(!tools->offers("mcp__test__nope"));
  BOOST_TEST(!tools->offers("echo"));

  auto defs = tools->definitions();
  auto add = std::find_if(defs.begin(), defs.end(), [](const auto& d) { return d.name == "mcp__test__add"; });
  BOOST_REQUIRE(add != defs.end());
  BOOST_TEST(add->description == "Adds two numbers");
  json::value schema = json::parse(add->parameters);
  BOOST_TEST(schema.at("type").as_string() == "object");
  BOOST_TEST(schema.at("properties").as_object().contains("a"));

  BOOST_TEST(call(io, *tools, "mcp__test__echo", R"({"text":"hi"})").text == "echo: hi");
  BOOST_TEST(call(io, *tools, "mcp__my_server___ok_2", "").text == "fine");
  BOOST_TEST(call(io, *tools, "mcp__test__env", R"({"name":"DEEPSEEK_API_KEY"})").text == "(unset)");
  auto failed = call(io, *tools, "mcp__test__fail", "{}");
  BOOST_TEST(failed.is_error);
  BOOST_TEST(failed.text == "it failed");
  stop(io, *tools);
}

BOOST_AUTO_TEST_CASE(bad_arguments_and_unknown_tools_are_error_results) {
  asio::io_context io;
  auto tools = started(io, {sdk_server("test")});
  auto bad = call(io, *tools, "mcp__test__echo", "{\"text\":");
  BOOST_TEST(bad.is_error);
  BOOST_TEST(bad.text.starts_with("Error: the arguments are not valid JSON"), bad.text);
  auto array = call(io, *tools, "mcp__test__echo", "[1]");
  BOOST_TEST(array.is_error);
  BOOST_TEST(array.text == "Error: the arguments must be a JSON object");
  auto unknown = call(io, *tools, "mcp__test__nope", "{}");
  BOOST_TEST(unknown.is_error);
  BOOST_TEST(unknown.text == "Error: there is no tool named \"mcp__test__nope\"");
  auto wrong = call(io, *tools, "mcp__test__add", R"({"a":"two"})");  // the server's own check
  BOOST_TEST(wrong.is_error);
  BOOST_TEST(!wrong.cancelled);
  BOOST_TEST(call(io, *tools, "mcp__test__add", R"({"a":2,"b":3})").text == "5");
  stop(io, *tools);
}

BOOST_AUTO_TEST_CASE(a_server_that_dies_withdraws_its_tools) {
  asio::io_context io;
  auto tools = started(io, {sdk_server("test"), sdk_server("other")});
  long pid = tools->pids().front();
  auto crash = call(io, *tools, "mcp__test__crash", "{}");
  BOOST_TEST(crash.is_error);
  BOOST_TEST(!crash.cancelled);
  BOOST_TEST(crash.text.find("MCP server \"test\"") != std::string::npos, crash.text);
  BOOST_TEST(crash.text.find("crashing now") != std::string::npos, crash.text);  // its stderr tail
  BOOST_TEST(crash.text.find("withdrawn: mcp__test__echo") != std::string::npos, crash.text);
  BOOST_TEST(!tools->offers("mcp__test__echo"));
  auto n = names(*tools);
  BOOST_TEST(!has(n, "mcp__test__echo"));
  BOOST_TEST(has(n, "mcp__other__echo"));
  BOOST_TEST(tools->servers() == 1u);
  auto later = call(io, *tools, "mcp__test__echo", R"({"text":"x"})");
  BOOST_TEST(later.is_error);
  BOOST_TEST(later.text.find("MCP server \"test\"") != std::string::npos, later.text);
  BOOST_TEST(call(io, *tools, "mcp__other__echo", R"({"text":"x"})").text == "echo: x");
  BOOST_TEST(gone(pid));
  stop(io, *tools);
}

BOOST_AUTO_TEST_CASE(a_cancelled_call_is_cancelled_and_the_server_stays) {
  asio::io_context io;
  auto tools = started(io, {sdk_server("test")});
  // An hour's wait: only the cancellation can end it (no clock is read).
  auto slow = call(io, *tools, "mcp__test__slow", R"({"ms":3600000})", std::chrono::milliseconds(100));
  BOOST_TEST(slow.cancelled);
  BOOST_TEST(slow.is_error);
  BOOST_TEST(tools->offers("mcp__test__slow"));
  BOOST_TEST(call(io, *tools, "mcp__test__echo", R"({"text":"still"})").text == "echo: still");
  stop(io, *tools);
}

BOOST_AUTO_TEST_CASE(stop_leaves_no_process_and_withdraws_everything) {
  asio::io_context io;
  auto tools = started(io, {sdk_server("a"), sdk_server("b"), fake_server("c", "noisy")});
  auto pids = tools->pids();
  BOOST_TEST(pids.size() == 3u);
  stop(io, *tools);
  for (long pid : pids) BOOST_TEST(gone(pid), pid);
  BOOST_TEST(tools->definitions().empty());
  BOOST_TEST(tools->servers() == 0u);
  auto after = call(io, *tools, "mcp__a__echo", R"({"text":"x"})");
  BOOST_TEST(after.is_error);
  stop(io, *tools);  // idempotent
}

BOOST_AUTO_TEST_CASE(stop_during_start_up_gives_the_start_up_and_leaves_nothing) {
  asio::io_context io;
  auto tools = std::make_shared<McpTools>();
  bool start_done = false;
  asio::co_spawn(io, tools->start(io.get_executor(), {sdk_server("fast"), fake_server("hung", "silent")}),
                 [&](std::exception_ptr) { start_done = true; });
  // Once the SDK server is up the silent one is still starting (it never answers).
  while (tools->servers() < 1) io.run_one();
  long pid = tools->pids().front();
  BOOST_TEST(!start_done);
  stop(io, *tools);  // the hung start has an hour's limit: only the stop can end it
  BOOST_TEST(start_done);
  BOOST_TEST(gone(pid));
  BOOST_TEST(tools->servers() == 0u);
  // A start after the stop starts nothing.
  auto again = started(io, {sdk_server("late")});
  BOOST_TEST(again->servers() == 1u);
  stop(io, *again);
  run_coroutine(io, [](std::shared_ptr<McpTools> t, asio::any_io_executor ex) -> asio::awaitable<int> {
    std::vector<mcp::ServerSpec> specs{sdk_server("never")};
    co_await t->start(ex, std::move(specs));
    co_return 0;
  }(tools, io.get_executor()));
  BOOST_TEST(tools->servers() == 0u);
}

BOOST_AUTO_TEST_CASE(abandoning_start_up_answers_soon) {
  asio::io_context io;
  auto tools = std::make_shared<McpTools>();
  bool start_done = false;
  asio::co_spawn(io, tools->start(io.get_executor(), {fake_server("hung", "silent")}),
                 [&](std::exception_ptr) { start_done = true; });
  asio::steady_timer t(io, std::chrono::milliseconds(200));
  t.async_wait([&](boost::system::error_code) { tools->abandon_start(); });
  while (!start_done) io.run_one();
  BOOST_TEST(tools->servers() == 0u);
  BOOST_TEST(tools->definitions().empty());
  stop(io, *tools);
}

// Two servers of 128 tools with 4 KiB descriptions, then one with a small tool: what is offered
// stays within kMaxToolBytes, and the small tool still fits after the large ones are left out.
BOOST_AUTO_TEST_CASE(the_offered_tools_fit_the_session_byte_limit) {
  asio::io_context io;
  auto tools = started(io, {fake_server("big", "many", std::chrono::hours(1), {"200", "4096"}),
                            fake_server("bigger", "many", std::chrono::hours(1), {"200", "4096"}),
                            fake_server("small", "noisy")});
  BOOST_TEST(tools->servers() == 3u);
  std::size_t bytes = 0;
  auto defs = tools->definitions();
  for (const auto& d : defs) bytes += d.name.size() + d.description.size() + d.parameters.size();
  BOOST_TEST(bytes <= engine::kMaxToolBytes);
  BOOST_TEST(bytes > engine::kMaxToolBytes - 5000);
  auto n = names(*tools);
  BOOST_TEST(has(n, "mcp__big__t0_0"));
  BOOST_TEST(!has(n, "mcp__bigger__t0_0"));
  BOOST_TEST(has(n, "mcp__small__ok"));
  BOOST_TEST(call(io, *tools, "mcp__small__ok", "{}").text == "fine");
  auto left_out = call(io, *tools, "mcp__bigger__t0_0", "{}");
  BOOST_TEST(left_out.is_error);
  stop(io, *tools);
}

// Two servers of 128 tools each (pages of 100): a model request carries at most 128 functions,
// built-in ones included, so the session offers max_session_mcp_tools() of them, in server order.
BOOST_AUTO_TEST_CASE(the_offered_tools_fit_one_model_request) {
  asio::io_context io;
  auto tools = started(io, {fake_server("first", "many", std::chrono::hours(1), {"100"}),
                            fake_server("second", "many", std::chrono::hours(1), {"100"})});
  BOOST_TEST(tools->servers() == 2u);
  // With ask_user and recall offered too, a request carries exactly the chat APIs' limit, never more.
  BOOST_TEST(engine::max_session_mcp_tools() + tools::builtin_tools().size() + engine::kConditionalServerTools ==
             engine::kMaxRequestTools);
  BOOST_TEST(engine::max_session_mcp_tools() > 100u);
  auto n = names(*tools);
  BOOST_TEST(n.size() == engine::max_session_mcp_tools());
  BOOST_TEST(tools->definitions().size() == engine::max_session_mcp_tools());
  // The first server's first page, then its second page up to the limit.
  const std::size_t last = engine::max_session_mcp_tools() - 100 - 1;
  BOOST_TEST(has(n, "mcp__first__t0_99"));
  BOOST_TEST(has(n, "mcp__first__t1_" + std::to_string(last)));
  BOOST_TEST(!has(n, "mcp__first__t1_" + std::to_string(last + 1)));
  BOOST_TEST(!has(n, "mcp__second__t0_0"));
  BOOST_TEST(call(io, *tools, "mcp__second__t0_0", "{}").is_error);
  stop(io, *tools);
}

// A call past --mcp-call-timeout-ms: an error result naming the server (not a cancellation: the
// turn goes on), the server heard notifications/cancelled and its tools stay.
BOOST_AUTO_TEST_CASE(a_call_past_its_time_limit_is_an_error_result_naming_the_server) {
  asio::io_context io;
  auto spec = fake_server("slow one", "hangs");
  spec.call_timeout = std::chrono::milliseconds(300);
  auto tools = started(io, {spec});
  auto late = call(io, *tools, "mcp__slow_one__hang", "{}");
  BOOST_TEST(late.is_error);
  BOOST_TEST(!late.cancelled);
  BOOST_TEST(late.text.find("MCP server \"slow one\" did not answer hang within 300 ms") == 0u, late.text);
  BOOST_TEST(tools->offers("mcp__slow_one__hang"));
  BOOST_TEST(call(io, *tools, "mcp__slow_one__cancelled", "{}").text == "[3]");
  stop(io, *tools);
}

BOOST_AUTO_TEST_SUITE_END()
