// Tool cards through the handlers (issue 28): session/prompt with a client that has a terminal and
// answers permission questions, then session/load of the same session in a new process. What the
// client sees live and what a reload shows, compared card by card.
#include "handler_fixture.hpp"

#include "handlers/handlers.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/tool_card.hpp"
#include "protocol/wire.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <map>

using namespace engine_fixture;

namespace {

// The editor: every permission allowed once, terminal/* answered by script.
struct Client {
  std::vector<std::string> methods;
  std::vector<json::value> questions;  ///< session/request_permission params
  json::object exit_status{{"exitCode", 3}, {"signal", nullptr}};
  std::string output = "boom\n";

  asio::awaitable<json::value> call(std::string method, json::value params) {
    methods.push_back(method);
    if (method == "session/request_permission") {
      questions.push_back(params);
      co_return json::parse(R"({"outcome":{"outcome":"selected","optionId":"allow_once"}})");
    }
    if (method == "terminal/create") co_return json::object{{"terminalId", "term-1"}};
    if (method == "terminal/wait_for_exit") co_return exit_status;
    if (method == "terminal/output")
      co_return json::object{{"output", output}, {"truncated", false}, {"exitStatus", exit_status}};
    co_return json::object{};
  }
};

// `client` answers the requests of `out`, offering terminals or not.
void connect(Wire& out, Client& client, bool terminal = true) {
  auto answer = [&client](std::string method, json::value params) {
    return client.call(std::move(method), std::move(params));
  };
  out.with_client(answer, json::object{{"terminal", terminal}});
}

// One tool card as the frames built it: every update in order, and the fields merged (the last
// value of each winning: what a client shows once the call is over).
struct Card {
  std::vector<json::object> updates;
  json::object merged;
};

std::map<std::string, Card> cards_of(const std::vector<std::string>& frames) {
  std::map<std::string, Card> cards;
  for (const auto& frame : frames) {
    BOOST_TEST(frame.size() <= handlers::kMaxNotificationBytes);
    json::value v = json::parse(frame);
    json::object update = v.at("params").at("update").as_object();
    const std::string kind(update.at("sessionUpdate").as_string());
    if (kind != "tool_call" && kind != "tool_call_update") continue;
    Card& card = cards[std::string(update.at("toolCallId").as_string())];
    card.updates.push_back(update);
    for (const auto& kv : update)
      if (kv.key() != "sessionUpdate") card.merged[kv.key()] = kv.value();
  }
  return cards;
}

json::value text_item(std::string_view text) {
  return json::object{{"type", "content"}, {"content", {{"type", "text"}, {"text", text}}}};
}

struct Session {
  std::string id;
  std::string cwd;
};

Session new_session(Fixture& f, Wire& out) {
  const std::string cwd = f.root + "/work";
  fs::create_directories(cwd);
  return {f.run(handlers::session_new(out.ctx, protocol::NewSessionRequest{cwd, {}, {}, {}})).sessionId, cwd};
}

void prompt(Fixture& f, Wire& out, const Session& s, std::vector<llm::ToolCall> calls) {
  f.provider.tool_steps.push_back(std::move(calls));
  auto r = f.run(handlers::session_prompt(out.ctx, protocol::PromptRequest{s.id, {protocol::TextContent{"go", {}, {}}}, {}}));
  BOOST_TEST((r.stopReason == protocol::StopReason::end_turn));
}

struct LiveTurn {
  Session session;
  std::map<std::string, Card> cards;
};

// One prompt whose model calls `calls`, in a new session of a process of its own; `files` are
// written into the session's cwd first. `terminal`: whether the client offers terminals.
LiveTurn live_turn(Fixture& f, Client& client, std::vector<llm::ToolCall> calls,
                   const std::vector<std::pair<std::string, std::string>>& files = {}, bool terminal = true) {
  auto p = f.process();
  Wire out(*p, f);
  connect(out, client, terminal);
  LiveTurn t{new_session(f, out), {}};
  for (const auto& [name, text] : files) std::ofstream(t.session.cwd + "/" + name) << text;
  prompt(f, out, t.session, std::move(calls));
  t.cards = cards_of(out.channel.frames);
  return t;
}

std::vector<std::string> reload(Fixture& f, const Session& s) {
  auto p = f.process();
  Wire out(*p, f);
  f.run(handlers::session_load(out.ctx, protocol::LoadSessionRequest{s.id, s.cwd, {}, {}, {}}));
  return out.channel.frames;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tool_cards)

// The bash card keeps the editor's terminal to the end; a non-zero exit fails it, and the card says
// how the command ended (a line beside the terminal, _meta). A reload has no terminal to show (it
// was released, the client may be another): the output as the model read it, the same status and
// _meta.
BOOST_AUTO_TEST_CASE(the_bash_card_keeps_its_terminal_and_fails_on_a_non_zero_exit) {
  Fixture f;
  Client client;
  auto [s, live] = live_turn(f, client, {llm::ToolCall{"b1", "bash", R"({"command":"make"})"}});
  BOOST_TEST(client.methods == (std::vector<std::string>{"session/request_permission", "terminal/create",
                                                         "terminal/wait_for_exit", "terminal/output", "terminal/release"}),
             boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(live.count("b1"), 1u);
  const Card& card = live["b1"];
  const json::object& last = card.updates.back();
  BOOST_TEST(last.at("sessionUpdate").as_string() == "tool_call_update");
  BOOST_TEST(last.at("status").as_string() == "failed");
  BOOST_TEST(last.at("content") == (json::array{json::object{{"type", "terminal"}, {"terminalId", "term-1"}},
                                                text_item("Exited with code 3.")}));
  BOOST_TEST(last.at("_meta") == json::parse(R"({"dsh-acp/exitStatus":{"exitCode":3,"signal":null}})"));

  auto replayed = cards_of(reload(f, s));
  BOOST_REQUIRE_EQUAL(replayed.count("b1"), 1u);
  const json::object& again = replayed["b1"].merged;
  BOOST_TEST(again.at("status") == card.merged.at("status"));
  BOOST_TEST(again.at("_meta") == card.merged.at("_meta"));
  BOOST_TEST(again.at("title") == card.merged.at("title"));
  BOOST_TEST(again.at("content") == json::array{text_item("boom\n[exit code: 3]")});
}

// Every result's final update carries rawOutput (the output the model read, whether it was an
// error, a command's end), live and replayed alike.
BOOST_AUTO_TEST_CASE(every_final_update_carries_raw_output_live_and_replayed) {
  Fixture f;
  Client client;
  auto [s, live] = live_turn(f, client, {llm::ToolCall{"b1", "bash", R"({"command":"make"})"},
                                         llm::ToolCall{"r1", "read", R"({"file_path":"missing.txt"})"}});
  BOOST_TEST(live["b1"].updates.back().at("rawOutput") ==
             json::parse(R"({"output":"boom\n[exit code: 3]","isError":false,"exitStatus":{"exitCode":3,"signal":null}})"));
  const json::value& read = live["r1"].updates.back().at("rawOutput");
  BOOST_TEST(read.at("isError") == json::value(true));
  BOOST_TEST(read.at("output").as_string().starts_with("Error: "));
  for (const auto& [id, card] : live)
    for (std::size_t i = 0; i + 1 < card.updates.size(); ++i) BOOST_TEST(!card.updates[i].contains("rawOutput"), id);
  auto replayed = cards_of(reload(f, s));
  for (const char* id : {"b1", "r1"})
    BOOST_TEST(replayed[id].updates.back().at("rawOutput") == live[id].updates.back().at("rawOutput"), id);
}

// A command that exits 0 completes; its terminal stays with the line that says so.
BOOST_AUTO_TEST_CASE(a_command_that_exits_zero_completes_with_its_terminal) {
  Fixture f;
  Client client;
  client.exit_status = json::object{{"exitCode", 0}, {"signal", nullptr}};
  auto p = f.process();
  Wire out(*p, f);
  connect(out, client);
  Session s = new_session(f, out);
  prompt(f, out, s, {llm::ToolCall{"b1", "bash", R"({"command":"true"})"}});
  auto cards = cards_of(out.channel.frames);
  const json::object& last = cards["b1"].updates.back();
  BOOST_TEST(last.at("status").as_string() == "completed");
  BOOST_TEST(last.at("content") == (json::array{json::object{{"type", "terminal"}, {"terminalId", "term-1"}},
                                                text_item("Exited with code 0.")}));
}

// An edit's first tool_call already shows the change it asks for, the permission question the
// same; the result shows the change made. A reload shows the same first card.
BOOST_AUTO_TEST_CASE(an_edit_card_carries_its_diff_from_the_first_tool_call) {
  Fixture f;
  Client client;
  auto [s, live] = live_turn(
      f, client, {llm::ToolCall{"e1", "edit", R"({"file_path":"a.txt","old_string":"two","new_string":"TWO"})"}},
      {{"a.txt", "one\ntwo\n"}});
  const json::value diff = json::parse(R"({"type":"diff","path":")" + s.cwd + R"(/a.txt","oldText":"two","newText":"TWO"})");
  const Card& card = live["e1"];
  BOOST_REQUIRE(!card.updates.empty());
  const json::object& first = card.updates.front();
  BOOST_TEST(first.at("sessionUpdate").as_string() == "tool_call");
  BOOST_TEST(first.at("status").as_string() == "pending");
  BOOST_TEST(first.at("content") == json::array{diff});
  BOOST_REQUIRE_EQUAL(client.questions.size(), 1u);
  BOOST_TEST(client.questions[0].at("toolCall").at("content") == json::array{diff});
  const json::object& last = card.updates.back();
  BOOST_TEST(last.at("status").as_string() == "completed");
  BOOST_TEST(last.at("content").at(0).at("type").as_string() == "diff");

  auto replayed = cards_of(reload(f, s));
  BOOST_TEST(replayed["e1"].updates.front().at("content") == first.at("content"));
  BOOST_TEST(replayed["e1"].merged.at("content") == card.merged.at("content"));
}

// Where the log holds everything a card shows (the tools run in the server), a reload shows the
// same cards: each first update as live but for its status (live asks `pending` before it runs),
// and each final update exactly (status, content, diffs, rawOutput, _meta).
BOOST_AUTO_TEST_CASE(a_reload_shows_the_cards_seen_live) {
  Fixture f;
  Client client;
  auto [s, live] = live_turn(
      f, client,
           {llm::ToolCall{"r1", "read", R"({"file_path":"a.txt"})"},
            llm::ToolCall{"r2", "read", R"({"file_path":"missing.txt"})"},
            llm::ToolCall{"e1", "edit", R"({"file_path":"a.txt","old_string":"beta","new_string":"gamma"})"},
            llm::ToolCall{"e2", "edit", R"({"file_path":"a.txt","old_string":"nowhere","new_string":"x"})"},
            llm::ToolCall{"w1", "write", R"({"file_path":"b.txt","content":"new\n"})"},
            llm::ToolCall{"b1", "bash", R"({"command":"echo ran"})"},
            llm::ToolCall{"b2", "bash", R"({"command":"echo bad; exit 3"})"},
            llm::ToolCall{"g1", "glob", R"({"pattern":"*.txt"})"},
            llm::ToolCall{"x1", "no_such_tool", "{}"}},
      {{"a.txt", "alpha\nbeta\n"}}, false);
  BOOST_TEST(live.size() == 9u);
  auto replayed = cards_of(reload(f, s));
  BOOST_TEST(replayed.size() == live.size());
  for (auto& [id, card] : live) {
    BOOST_TEST_CONTEXT(id) {
      Card& again = replayed[id];
      BOOST_REQUIRE(!again.updates.empty());
      json::object first = card.updates.front(), replayed_first = again.updates.front();
      BOOST_TEST(first.at("status").as_string() == "pending");
      first.erase("status");
      replayed_first.erase("status");
      BOOST_TEST(replayed_first == first);
      BOOST_TEST(again.updates.back() == card.updates.back());
      BOOST_TEST(card.updates.back().contains("rawOutput"));
    }
  }
  BOOST_TEST(live["b2"].merged.at("status").as_string() == "failed");
  BOOST_TEST(live["e2"].merged.at("status").as_string() == "failed");
  BOOST_TEST(live["e1"].updates.front().at("content").at(0).at("type").as_string() == "diff");
}

// Arguments holding an escaped unpaired surrogate, as JavaScript writers produce them, are read as
// the tool runner reads them (U+FFFD), so the card shows the call's object and its place, not the
// raw string. Text that is not JSON still shows as the string it is.
BOOST_AUTO_TEST_CASE(arguments_with_an_unpaired_surrogate_show_as_an_object) {
  const json::value raw = R"({"file_path":"a\ud800.txt"})";
  json::value parsed = handlers::parse_arguments(&raw);
  BOOST_REQUIRE(parsed.is_object());
  BOOST_TEST(parsed.at("file_path").as_string() == "a\xEF\xBF\xBD.txt");
  const protocol::ToolCall card = handlers::tool_call_card("r1", "read", std::move(parsed), "/work");
  BOOST_REQUIRE(card.locations && card.locations->size() == 1u);
  BOOST_TEST(card.locations->front().path == "/work/a\xEF\xBF\xBD.txt");
  const json::value broken = R"({"file_path":"a.txt")";
  BOOST_TEST(handlers::parse_arguments(&broken) == broken);
}

BOOST_AUTO_TEST_SUITE_END()
