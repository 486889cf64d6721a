// How session/load shows a harness session (issue 15): the harness's tools as tool_call cards with
// kinds, titles, locations and diffs; todo/write as a plan; images as placeholders that notice a
// missing attachment; 0.1.1 compactions and prunes; a 0.1.1 recall after its direct message. Fed
// events in the normalised shape (docs/store-format.md#normalised-events) that the store's readers give for either
// store generation. Reference and compaction cards themselves are tested in references_test.cpp.
#include "../common/temp_dir.hpp"
#include "handlers/message_id.hpp"
#include "handlers/replay.hpp"
#include "protocol/wire.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace acp;
namespace json = boost::json;

namespace {

constexpr std::string_view kCwd = "/work/proj";

std::vector<json::value> replay(const std::vector<json::object>& events, handlers::ReplayPlaces places = {std::string(kCwd), ""}) {
  handlers::Replayer replayer(std::move(places));
  std::vector<protocol::SessionUpdate> out;
  for (const auto& e : events) replayer.on_event(e, out);
  std::vector<json::value> encoded;
  for (const auto& u : out) encoded.push_back(wire::encode(u));
  return encoded;
}

json::object event(std::int64_t seq, std::string_view type, json::object data) {
  return json::object{{"type", type}, {"seq", seq}, {"time", 1}, {"data", std::move(data)}};
}

json::object surface(std::int64_t seq, std::string_view type, json::object data, json::value op = "append") {
  json::object e = event(seq, type, std::move(data));
  e["surfaceOp"] = std::move(op);
  return e;
}

json::object tool_call(std::int64_t seq, std::string_view id, std::string_view name, const json::object& args) {
  return event(seq, "tool/call",
               {{"turn", 1}, {"step", 1}, {"callId", id}, {"name", name}, {"arguments", json::serialize(args)}});
}

json::object tool_result(std::int64_t seq, std::string_view id, std::string_view text, bool error = false) {
  return surface(seq, "tool/result",
                 {{"turn", 1},
                  {"step", 1},
                  {"callId", id},
                  {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
                  {"isError", error}});
}

json::object text_message(std::int64_t seq, std::string_view text, json::object source) {
  return surface(seq, "user/message",
                 {{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}, {"source", std::move(source)}});
}

json::object turn_end(std::int64_t seq, int turn) {
  return event(seq, "turn/end", {{"turn", turn}, {"reason", {{"kind", "completed"}}}});
}

const json::value& content_item(const json::value& update, std::size_t i) { return update.at("content").at(i); }

std::string tag(const json::value& update) { return std::string(update.at("sessionUpdate").as_string()); }


} // namespace

BOOST_AUTO_TEST_SUITE(replay_tool_cards)

// The harness 0.1.1 tool catalog: kinds as ACP means them, titles a person reads, file locations.
BOOST_AUTO_TEST_CASE(harness_tools_get_kinds_titles_and_locations) {
  auto updates = replay({
      tool_call(1, "c1", "read", {{"file_path", "src/a.cpp"}, {"offset", 40}, {"limit", 20}}),
      tool_call(2, "c2", "write", {{"file_path", "/abs/new.txt"}, {"content", "x"}}),
      tool_call(3, "c3", "edit", {{"file_path", "./src/../b.cpp"}, {"old_string", "a"}, {"new_string", "b"}}),
      tool_call(4, "c4", "bash", {{"command", "npm test\necho done"}, {"description", "Run the tests"}}),
      tool_call(5, "c5", "bash", {{"command", std::string(200, 'x')}, {"description", "long"}}),
      tool_call(6, "c6", "glob", {{"pattern", "**/*.ts"}, {"path", "src"}}),
      tool_call(7, "c7", "grep", {{"pattern", "TODO"}, {"path", "lib"}, {"include", "*.cpp"}}),
      tool_call(8, "c8", "grep", {{"pattern", "x"}}),
      tool_call(9, "c9", "todo_write", {{"todos", json::array{}}}),
      tool_call(10, "c10", "lsp", {{"file_path", "src/a.cpp"}}),
      tool_call(11, "c11", "read", {{"offset", 2}}),
  });
  BOOST_TEST_REQUIRE(updates.size() == 11u);
  for (const auto& u : updates) {
    BOOST_TEST(tag(u) == "tool_call");
    BOOST_TEST(u.at("status").as_string() == "in_progress");
  }
  auto kind = [&](std::size_t i) { return std::string(updates[i].at("kind").as_string()); };
  auto title = [&](std::size_t i) { return std::string(updates[i].at("title").as_string()); };
  BOOST_TEST(kind(0) == "read");
  BOOST_TEST(title(0) == "Read src/a.cpp:40-59");
  BOOST_TEST(updates[0].at("locations") == json::parse(R"([{"path":"/work/proj/src/a.cpp","line":40}])"));
  BOOST_TEST(updates[0].at("rawInput") == json::parse(R"({"file_path":"src/a.cpp","offset":40,"limit":20})"));
  BOOST_TEST(kind(1) == "edit");
  BOOST_TEST(title(1) == "Write /abs/new.txt");
  BOOST_TEST(updates[1].at("locations") == json::parse(R"([{"path":"/abs/new.txt"}])"));
  BOOST_TEST(kind(2) == "edit");
  BOOST_TEST(title(2) == "Edit ./src/../b.cpp");
  BOOST_TEST(updates[2].at("locations") == json::parse(R"([{"path":"/work/proj/b.cpp"}])"));
  BOOST_TEST(kind(3) == "execute");
  BOOST_TEST(title(3) == "Run `npm test\u2026`");  // the first line; the mark says there is more
  BOOST_TEST(!updates[3].as_object().contains("locations"));
  BOOST_TEST(title(4) == "Run `" + std::string(96, 'x') + "\u2026`");
  BOOST_TEST(kind(5) == "search");
  BOOST_TEST(title(5) == "Find **/*.ts in src");
  BOOST_TEST(kind(6) == "search");
  BOOST_TEST(title(6) == "Search for TODO in lib (*.cpp)");
  BOOST_TEST(title(7) == "Search for x");
  BOOST_TEST(!updates[6].as_object().contains("locations"));
  BOOST_TEST(kind(8) == "other");
  BOOST_TEST(title(8) == "Update plan");
  // A tool outside the catalog: honest `other`, its name, no guessed location.
  BOOST_TEST(kind(9) == "other");
  BOOST_TEST(title(9) == "lsp");
  BOOST_TEST(!updates[9].as_object().contains("locations"));
  // A catalog tool without its subject argument keeps its kind and shows its name.
  BOOST_TEST(kind(10) == "read");
  BOOST_TEST(title(10) == "read");
  BOOST_TEST(!updates[10].as_object().contains("locations"));
}

BOOST_AUTO_TEST_CASE(titles_are_one_line_and_relative_paths_stay_relative_without_a_cwd) {
  auto updates = replay({tool_call(1, "c1", "read", {{"file_path", "a\tb\x7f.txt"}}),
                         tool_call(2, "c2", "bash", {{"command", "\n\n  ls -la  \n"}})},
                        {"", ""});
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[0].at("title").as_string() == "Read a b .txt");
  BOOST_TEST(!updates[0].as_object().contains("locations"));  // ACP locations are absolute
  BOOST_TEST(updates[1].at("title").as_string() == "Run `ls -la`");
}

// 0.1.1 (and 45fc) log the assistant message with its tool-call blocks before the tool/call events.
BOOST_AUTO_TEST_CASE(a_call_in_the_assistant_message_and_its_tool_call_event_make_one_card) {
  const std::string args = R"({"command":"ls"})";
  auto updates = replay({
      surface(1, "assistant/message",
              {{"turn", 1},
               {"step", 1},
               {"content", json::array{json::object{{"type", "tool-call"}, {"id", "c1"}, {"name", "bash"}, {"arguments", args}}}},
               {"provenance", {{"provider", "p"}, {"model", "m"}}}}),
      event(2, "tool/call", {{"turn", 1}, {"step", 1}, {"callId", "c1"}, {"name", "bash"}, {"arguments", args}}),
      tool_result(3, "c1", "a.txt\n[exit code: 0]"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[0].at("title").as_string() == "Run `ls`");
  BOOST_TEST(updates[0].at("kind").as_string() == "execute");
  BOOST_TEST(tag(updates[1]) == "tool_call_update");
  BOOST_TEST(updates[1].at("status").as_string() == "completed");
  BOOST_TEST(updates[1].at("content") ==
             json::parse(R"([{"type":"content","content":{"type":"text","text":"a.txt\n[exit code: 0]"}}])"));
}

// An edit that succeeded shows its change as a diff, from its arguments when the result records none.
BOOST_AUTO_TEST_CASE(a_successful_edit_or_write_shows_a_diff_built_from_its_arguments) {
  auto updates = replay({
      tool_call(1, "e1", "edit", {{"file_path", "src/a.cpp"}, {"old_string", "int x = 1;"}, {"new_string", "int x = 2;"}}),
      tool_result(2, "e1", "The file src/a.cpp has been updated successfully."),
      tool_call(3, "w1", "write", {{"file_path", "/abs/new.txt"}, {"content", "hello\n"}}),
      tool_result(4, "w1", "Wrote /abs/new.txt"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 4u);
  BOOST_TEST(updates[1].at("status").as_string() == "completed");
  BOOST_TEST(content_item(updates[1], 0) ==
             json::parse(R"({"type":"diff","path":"/work/proj/src/a.cpp","oldText":"int x = 1;","newText":"int x = 2;"})"));
  BOOST_TEST(content_item(updates[1], 1).at("content").at("text").as_string() ==
             "The file src/a.cpp has been updated successfully.");
  // A write: the whole content as new text, no old text (ACP's shape for a new file).
  BOOST_TEST(content_item(updates[3], 0) == json::parse(R"({"type":"diff","path":"/abs/new.txt","newText":"hello\n"})"));
}

// The change a write or edit asks for is on its card from the first update, before it runs (and
// before the user is asked about it); other tools' first cards have no content.
BOOST_AUTO_TEST_CASE(a_write_or_edits_first_card_shows_the_change_it_asks_for) {
  auto updates = replay({
      tool_call(1, "e1", "edit", {{"file_path", "src/a.cpp"}, {"old_string", "int x = 1;"}, {"new_string", "int x = 2;"}}),
      tool_call(2, "w1", "write", {{"file_path", "/abs/new.txt"}, {"content", "hello\n"}}),
      tool_call(3, "b1", "bash", {{"command", "ls"}}),
      tool_call(4, "e2", "edit", {{"old_string", "a"}, {"new_string", "b"}}),
  });
  BOOST_TEST_REQUIRE(updates.size() == 4u);
  BOOST_TEST(tag(updates[0]) == "tool_call");
  BOOST_TEST(updates[0].at("content") ==
             json::parse(R"([{"type":"diff","path":"/work/proj/src/a.cpp","oldText":"int x = 1;","newText":"int x = 2;"}])"));
  BOOST_TEST(updates[1].at("content") == json::parse(R"([{"type":"diff","path":"/abs/new.txt","newText":"hello\n"}])"));
  BOOST_TEST(!updates[2].as_object().contains("content"));
  BOOST_TEST(!updates[3].as_object().contains("content"));  // no file named: no change to show
}

// The harness records the applied hunks (with context lines) in the result's meta.diffs: they win.
BOOST_AUTO_TEST_CASE(the_hunks_a_result_records_win_over_the_arguments) {
  json::object result = tool_result(2, "e1", "updated");
  result["data"].as_object()["meta"] = json::parse(
      R"({"diffs":[{"path":"config.txt","oldText":"mode=DEBUG\nlevel=info","newText":"mode=RELEASE\nlevel=info"},)"
      R"({"path":"config.txt","oldText":null,"newText":"added"},{"path":"bad","newText":7}]})");
  auto updates = replay({
      tool_call(1, "e1", "edit", {{"file_path", "config.txt"}, {"old_string", "DEBUG"}, {"new_string", "RELEASE"}}),
      result,
  });
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[1].at("content") == json::parse(R"([
      {"type":"diff","path":"/work/proj/config.txt","oldText":"mode=DEBUG\nlevel=info","newText":"mode=RELEASE\nlevel=info"},
      {"type":"diff","path":"/work/proj/config.txt","newText":"added"},
      {"type":"content","content":{"type":"text","text":"updated"}}])"));
  // Only the file tools' meta is read as diffs (another tool's meta is its own business).
  json::object other = tool_result(4, "b1", "out");
  other["data"].as_object()["meta"] = json::parse(R"({"diffs":[{"path":"x","newText":"y"}]})");
  auto bash = replay({tool_call(3, "b1", "bash", {{"command", "x"}}), other});
  BOOST_TEST(bash[1].at("content").as_array().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_failed_edit_shows_its_error_and_no_diff) {
  auto updates = replay({
      tool_call(1, "e1", "edit", {{"file_path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}}),
      tool_result(2, "e1", "Error: old_string was not found in \"a.txt\"", true),
  });
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[1].at("status").as_string() == "failed");
  BOOST_TEST(updates[1].at("content") ==
             json::parse(R"([{"type":"content","content":{"type":"text","text":"Error: old_string was not found in \"a.txt\""}}])"));
}

// Memory stays bounded: a call's arguments are let go once its result is shown, and a turn's
// bookkeeping once the turn ends (a later result with the same id is a new card, without a diff).
BOOST_AUTO_TEST_CASE(the_arguments_a_result_needs_are_dropped_with_the_result_and_the_turn) {
  const json::object edit{{"file_path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}};
  auto updates = replay({
      tool_call(1, "e1", "edit", edit),
      tool_result(2, "e1", "ok"),
      tool_result(3, "e1", "ok again"),
      tool_call(4, "e2", "edit", edit),
      turn_end(5, 1),
      tool_result(6, "e2", "late"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 6u);
  BOOST_TEST(content_item(updates[1], 0).at("type").as_string() == "diff");
  BOOST_TEST(updates[2].at("content").as_array().size() == 1u);  // no second diff: the arguments are gone
  BOOST_TEST(content_item(updates[2], 0).at("type").as_string() == "content");
  BOOST_TEST(updates[3].at("toolCallId").as_string() == "e2");
  // After turn/end: a generic card for the orphaned result, and no diff.
  BOOST_TEST(tag(updates[4]) == "tool_call");
  BOOST_TEST(updates[4].at("title").as_string() == "tool");
  BOOST_TEST(!updates[4].as_object().contains("rawInput"));
  BOOST_TEST(updates[5].at("content").as_array().size() == 1u);
}

// A prune replaces an old result's output in what the model is sent (compaction/prune, then the
// tool/result with surfaceOp replace); the card keeps the output it showed, nothing new appears.
BOOST_AUTO_TEST_CASE(a_pruned_tool_result_shows_nothing_new) {
  json::object pruned = tool_result(5, "c1", "[tool output pruned]");
  pruned["surfaceOp"] = json::object{{"op", "replace"}, {"start", 2}, {"end", 2}};
  pruned["sourceEventSeqs"] = json::array{2};
  auto updates = replay({
      tool_call(1, "c1", "bash", {{"command", "cat big.log"}}),
      tool_result(2, "c1", "lots of output"),
      turn_end(3, 1),
      event(4, "compaction/prune", {{"shadowedRange", {{"start", 2}, {"end", 2}}}, {"shadowedSeqs", {2}}, {"shadowedTokenCount", 900}}),
      pruned,
  });
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(content_item(updates[1], 0).at("content").at("text").as_string() == "lots of output");
}

// A command's result records how it ended (meta.exitStatus, ACP's terminal exit status): a
// non-zero exit, a signal or a timeout fails the card, and the card's _meta says how it ended.
BOOST_AUTO_TEST_CASE(a_command_that_exits_non_zero_fails_its_card_and_says_how_it_ended) {
  auto with_meta = [](json::object result, std::string_view meta) {
    result["data"].as_object()["meta"] = json::parse(meta);
    return result;
  };
  auto updates = replay({
      tool_call(1, "b1", "bash", {{"command", "false"}}),
      with_meta(tool_result(2, "b1", "oops\n[exit code: 3]"), R"({"exitStatus":{"exitCode":3,"signal":null}})"),
      tool_call(3, "b2", "bash", {{"command", "true"}}),
      with_meta(tool_result(4, "b2", "(no output)"), R"({"exitStatus":{"exitCode":0,"signal":null}})"),
      tool_call(5, "b3", "bash", {{"command", "kill -TERM $$"}}),
      with_meta(tool_result(6, "b3", "[killed by signal 15]"), R"({"exitStatus":{"exitCode":null,"signal":"SIGTERM"}})"),
      tool_call(7, "b4", "bash", {{"command", "sleep 9"}}),
      with_meta(tool_result(8, "b4", "[timed out after 5 s: the command was killed]", true),
                R"({"exitStatus":{"exitCode":null,"signal":"SIGKILL"},"timedOutMs":5000})"),
      // Not in that shape (another writer's meta): the result's own isError decides.
      tool_call(9, "b5", "bash", {{"command", "x"}}),
      with_meta(tool_result(10, "b5", "x"), R"({"exitStatus":{"exitCode":"3"}})"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 10u);
  BOOST_TEST(updates[1].at("status").as_string() == "failed");
  BOOST_TEST(updates[1].at("_meta") == json::parse(R"({"dsh-acp/exitStatus":{"exitCode":3,"signal":null}})"));
  // Without a terminal the card shows what the model read: the output and its note.
  BOOST_TEST(updates[1].at("content") ==
             json::parse(R"([{"type":"content","content":{"type":"text","text":"oops\n[exit code: 3]"}}])"));
  BOOST_TEST(updates[3].at("status").as_string() == "completed");
  BOOST_TEST(updates[3].at("_meta") == json::parse(R"({"dsh-acp/exitStatus":{"exitCode":0,"signal":null}})"));
  BOOST_TEST(updates[5].at("status").as_string() == "failed");
  BOOST_TEST(updates[7].at("status").as_string() == "failed");
  BOOST_TEST(updates[7].at("_meta") ==
             json::parse(R"({"dsh-acp/exitStatus":{"exitCode":null,"signal":"SIGKILL","timedOutMs":5000}})"));
  BOOST_TEST(updates[9].at("status").as_string() == "completed");
  BOOST_TEST(!updates[9].as_object().contains("_meta"));
}

// Live, a command in the editor's terminal keeps the terminal in its final card (the client goes on
// showing its output after release), with a line saying how it ended beside it.
BOOST_AUTO_TEST_CASE(a_command_in_the_editors_terminal_keeps_it_in_its_final_card) {
  handlers::Replayer live(handlers::ReplayPlaces{std::string(kCwd), ""});
  std::vector<protocol::SessionUpdate> out;
  auto feed = [&](const json::object& e) { live.on_event(e, out); };
  auto with = [](json::object result, std::string_view meta, std::string_view error = {}) {
    result["data"].as_object()["meta"] = json::parse(meta);
    if (!error.empty()) result["data"].as_object()["error"] = json::object{{"name", "AbortError"}, {"code", error}};
    return result;
  };
  feed(tool_call(1, "b1", "bash", {{"command", "make"}}));
  live.attach_terminal("b1", "term-1");
  feed(with(tool_result(2, "b1", "built\n[exit code: 2]"), R"({"exitStatus":{"exitCode":2,"signal":null}})"));
  feed(tool_call(3, "b2", "bash", {{"command", "true"}}));
  live.attach_terminal("b2", "term-2");
  feed(with(tool_result(4, "b2", "(no output)"), R"({"exitStatus":{"exitCode":0,"signal":null}})"));
  feed(tool_call(5, "b3", "bash", {{"command", "sleep 9"}}));
  live.attach_terminal("b3", "term-3");
  feed(with(tool_result(6, "b3", "[cancelled: the command was killed]", true),
            R"({"exitStatus":{"exitCode":null,"signal":"SIGKILL"}})", "TOOL_ABORTED"));
  feed(tool_call(7, "b4", "bash", {{"command", "sleep 9"}}));
  live.attach_terminal("b4", "term-4");
  feed(with(tool_result(8, "b4", "started\n[timed out after 300 ms: the command was killed]", true),
            R"({"exitStatus":{"exitCode":null,"signal":null},"timedOutMs":300})"));
  // The editor failed the call after creating the terminal: its error is the line.
  feed(tool_call(9, "b5", "bash", {{"command", "x"}}));
  live.attach_terminal("b5", "term-5");
  feed(tool_result(10, "b5", "Error: the editor refused: gone", true));
  std::vector<json::value> updates;
  for (const auto& u : out) updates.push_back(wire::encode(u));
  BOOST_TEST_REQUIRE(updates.size() == 10u);
  auto card = [](std::string_view terminal, std::string_view line) {
    return json::array{json::object{{"type", "terminal"}, {"terminalId", terminal}},
                       json::object{{"type", "content"}, {"content", {{"type", "text"}, {"text", line}}}}};
  };
  BOOST_TEST(updates[1].at("status").as_string() == "failed");
  BOOST_TEST(updates[1].at("content") == card("term-1", "Exited with code 2."));
  BOOST_TEST(updates[1].at("_meta") == json::parse(R"({"dsh-acp/exitStatus":{"exitCode":2,"signal":null}})"));
  BOOST_TEST(updates[3].at("status").as_string() == "completed");
  BOOST_TEST(updates[3].at("content") == card("term-2", "Exited with code 0."));
  BOOST_TEST(updates[5].at("status").as_string() == "failed");
  BOOST_TEST(updates[5].at("content") == card("term-3", "Cancelled: the command was killed."));
  BOOST_TEST(updates[7].at("content") == card("term-4", "Timed out after 300 ms: the command was killed."));
  BOOST_TEST(updates[9].at("status").as_string() == "failed");
  BOOST_TEST(updates[9].at("content") == card("term-5", "Error: the editor refused: gone"));
  // A terminal belongs to its call only: the same id in a later turn has none.
  feed(turn_end(11, 1));
  live.attach_terminal("b6", "term-6");
  feed(turn_end(12, 2));
  out.clear();
  feed(tool_call(13, "b6", "bash", {{"command", "true"}}));
  feed(with(tool_result(14, "b6", "(no output)"), R"({"exitStatus":{"exitCode":0,"signal":null}})"));
  BOOST_TEST_REQUIRE(out.size() == 2u);
  BOOST_TEST(wire::encode(out[1]).at("content").at(0).at("type").as_string() == "content");
}

// Every result's card carries rawOutput: the text the model read (at most 32 KiB, cut on a code
// point with a note of what is not shown), whether it was an error, and a command's end.
BOOST_AUTO_TEST_CASE(every_result_carries_a_bounded_raw_output) {
  json::object bash = tool_result(4, "b1", "oops\n[exit code: 3]");
  bash["data"].as_object()["meta"] = json::parse(R"({"exitStatus":{"exitCode":3,"signal":null}})");
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "\xF0\x9F\x98\x80";  // 80,000 bytes of 4-byte characters
  auto updates = replay({
      tool_call(1, "r1", "read", {{"file_path", "a.txt"}}),
      tool_result(2, "r1", "Error: no such file", true),
      tool_call(3, "b1", "bash", {{"command", "false"}}),
      bash,
      tool_call(5, "m1", "mcp__srv__dump", {}),
      tool_result(6, "m1", big),
  });
  BOOST_TEST_REQUIRE(updates.size() == 6u);
  BOOST_TEST(updates[1].at("rawOutput") == json::parse(R"({"output":"Error: no such file","isError":true})"));
  BOOST_TEST(updates[3].at("rawOutput") ==
             json::parse(R"({"output":"oops\n[exit code: 3]","isError":false,"exitStatus":{"exitCode":3,"signal":null}})"));
  const std::string output(updates[5].at("rawOutput").at("output").as_string());
  BOOST_TEST(output.size() <= handlers::kMaxRawOutputBytes);
  BOOST_TEST(output.size() > handlers::kMaxRawOutputBytes - 128);
  const std::size_t kept = output.find("\n\u2026 (");
  BOOST_REQUIRE(kept != std::string::npos);
  BOOST_TEST(kept % 4 == 0u);  // whole characters only
  BOOST_TEST(big.compare(0, kept, output, 0, kept) == 0);
  BOOST_TEST(output.substr(kept) == "\n\u2026 (" + std::to_string(big.size() - kept) + " more bytes not shown)");
  // The first card has none: nothing has run yet.
  BOOST_TEST(!updates[0].as_object().contains("rawOutput"));
}

// todo_write's 0.1.1 shape {todos:[{content, status}]} (statuses pending, in_progress, completed).
BOOST_AUTO_TEST_CASE(todo_write_becomes_a_plan_with_its_statuses) {
  auto updates = replay({event(1, "todo/write",
                               {{"todos", json::parse(R"([{"content":"read the spec","status":"completed"},)"
                                                      R"({"content":"write the code","status":"in_progress","activeForm":"Writing"},)"
                                                      R"({"content":"test it","status":"pending"}])")}})});
  BOOST_TEST_REQUIRE(updates.size() == 1u);
  BOOST_TEST(updates[0] == json::parse(R"({"sessionUpdate":"plan","entries":[
      {"content":"read the spec","priority":"medium","status":"completed"},
      {"content":"write the code","priority":"medium","status":"in_progress"},
      {"content":"test it","priority":"medium","status":"pending"}]})"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(replay_images)

json::object image_block(std::string_view hex, std::string_view name = "shot.png") {
  json::object attachment{{"attachmentId", "sha256:" + std::string(hex)},
                          {"mediaType", "image/png"},
                          {"width", 10},
                          {"height", 20},
                          {"bytes", 2048}};
  if (!name.empty()) attachment["name"] = name;
  return json::object{{"type", "image"}, {"attachment", std::move(attachment)}};
}

// Images reach the client as text: the attachment's name, type and size, and whether it is still
// in the harness's attachment store (<home>/attachments/v1/objects/<hex[0:2]>/<hex>).
BOOST_AUTO_TEST_CASE(images_are_placeholders_that_notice_a_missing_attachment) {
  acp::test::TempDir home("dsh-replay");
  const std::string present(64, 'a'), missing(64, 'b');
  ::mkdir((home.path() + "/attachments").c_str(), 0700);
  ::mkdir((home.path() + "/attachments/v1").c_str(), 0700);
  ::mkdir((home.path() + "/attachments/v1/objects").c_str(), 0700);
  ::mkdir((home.path() + "/attachments/v1/objects/aa").c_str(), 0700);
  std::ofstream(home.path() + "/attachments/v1/objects/aa/" + present) << "png";
  // A directory where the object should be is not an attachment.
  ::mkdir((home.path() + "/attachments/v1/objects/bb").c_str(), 0700);
  ::mkdir((home.path() + "/attachments/v1/objects/bb/" + missing).c_str(), 0700);

  json::array content{json::object{{"type", "text"}, {"text", "what is wrong here?"}}, image_block(present),
                      image_block(missing, "")};
  auto updates = replay(
      {
          surface(1, "user/message", {{"content", content}, {"source", {{"kind", "user"}}}, {"role", "user"}, {"id", "m1"}}),
          surface(2, "user/message",
                  {{"content", json::array{image_block("../../../../etc/passwd")}}, {"source", {{"kind", "user"}}}}),
          event(3, "assistant/chunk", {{"turn", 1}, {"step", 1}, {"chunk", {{"type", "text-delta"}, {"text", "a cat"}}}}),
          surface(4, "assistant/message",
                  {{"turn", 1},
                   {"step", 1},
                   {"content", json::array{json::object{{"type", "text"}, {"text", "a cat"}}, image_block(present, "cat.png")}},
                   {"provenance", {{"provider", "p"}, {"model", "m"}}}}),
          tool_call(5, "r1", "read_image", {{"file_path", "cat.png"}}),
          surface(6, "tool/result",
                  {{"turn", 1}, {"step", 1}, {"callId", "r1"}, {"content", json::array{image_block(missing, "cat.png")}}, {"isError", false}}),
      },
      {std::string(kCwd), home.path()});
  BOOST_TEST_REQUIRE(updates.size() == 6u);
  BOOST_TEST(updates[0].at("content").at("text").as_string() ==
             "what is wrong here?\n[image shot.png (image/png, 2048 bytes)]\n[image (image/png, 2048 bytes) \u2014 attachment missing]");
  // An id that is not sha256:<64 hex> names no file: missing, never looked up.
  BOOST_TEST(updates[1].at("content").at("text").as_string() == "[image shot.png (image/png, 2048 bytes) \u2014 attachment missing]");
  BOOST_TEST(updates[2].at("content").at("text").as_string() == "a cat");
  // Chunks never carry images: the streamed step's image still shows, on lines of its own.
  BOOST_TEST(tag(updates[3]) == "agent_message_chunk");
  BOOST_TEST(updates[3].at("content").at("text").as_string() == "\n[image cat.png (image/png, 2048 bytes)]\n");
  BOOST_TEST(updates[4].at("kind").as_string() == "read");
  BOOST_TEST(updates[4].at("title").as_string() == "Read image cat.png");
  BOOST_TEST(content_item(updates[5], 0).at("content").at("text").as_string() ==
             "[image cat.png (image/png, 2048 bytes) \u2014 attachment missing]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(replay_harness_0_1)

// A 0.1.1 compaction as normalised: compact/* with a compactionId, a manual one outside any turn
// (turn null), the checkpoint's source naming the compaction. The same card as ours.
BOOST_AUTO_TEST_CASE(a_manual_0_1_compaction_shows_the_compaction_card) {
  json::object checkpoint = surface(
      6, "user/message",
      {{"content", json::array{json::object{{"type", "text"}, {"text", "preamble\n\n<compacted-summary>"}},
                               json::object{{"type", "text"}, {"text", "## Goal\n- ship"}},
                               json::object{{"type", "text"}, {"text", "</compacted-summary>"}}}},
       {"source", {{"kind", "plugin"}, {"plugin", "compact"}, {"compactionId", "k1"}}},
       {"role", "user"},
       {"id", "m9"}},
      json::object{{"op", "replace"}, {"start", 1}, {"end", 2}});
  checkpoint["sourceEventSeqs"] = json::array{4, 5, 1, 2};
  auto updates = replay({
      text_message(1, "question", {{"kind", "user"}}),
      event(2, "assistant/chunk", {{"turn", 1}, {"step", 1}, {"chunk", {{"type", "text-delta"}, {"text", "answer"}}}}),
      turn_end(3, 1),
      event(4, "compact/start", {{"compactionId", "k1"}, {"turn", nullptr}}),
      event(5, "compact/summary",
            {{"compactionId", "k1"}, {"summary", json::array{}}, {"shadowedRange", {{"start", 1}, {"end", 2}}},
             {"shadowedSeqs", {1, 2}}, {"shadowedTokenCount", 10}, {"provider", "p"}, {"model", "m"}}),
      checkpoint,
      event(7, "compact/end", {{"compactionId", "k1"}, {"turn", nullptr}}),
  });
  BOOST_TEST_REQUIRE(updates.size() == 3u);
  const auto& card = updates[2];
  BOOST_TEST(tag(card) == "tool_call");
  BOOST_TEST(card.at("toolCallId").as_string() == "dsh-compact-6");
  BOOST_TEST(card.at("kind").as_string() == "think");
  BOOST_TEST(card.at("title").as_string() == "Compacted conversation \u00B7 2 messages");
  BOOST_TEST(content_item(card, 0).at("content").at("text").as_string() == "## Goal\n- ship");
}

const json::object kRecallSource = json::parse(
    R"({"kind":"session-reference","form":"recall","version":1,"references":[{"sessionId":"src","label":"Alpha",)"
    R"("capturedThroughSeq":3,"compacted":false,"originalMessages":1,"retainedMessages":1,"omittedMessages":0,)"
    R"("omittedBytes":0,"truncated":false,"inputIndex":0}]})").as_object();

// 0.1.1 writes the recall message right AFTER its direct message: its card goes with that message,
// at once, and the next direct message gets none.
BOOST_AUTO_TEST_CASE(a_recall_right_after_its_direct_message_shows_its_card_there) {
  auto updates = replay({
      event(0, "turn/start", {{"turn", 1}}),
      text_message(1, "use @Alpha", {{"kind", "user"}}),
      text_message(2, "## Referenced sessions\n\nsnapshot", kRecallSource),
      event(3, "assistant/chunk", {{"turn", 1}, {"step", 1}, {"chunk", {{"type", "text-delta"}, {"text", "ok"}}}}),
      turn_end(4, 1),
      event(5, "turn/start", {{"turn", 2}}),
      text_message(6, "next", {{"kind", "user"}}),
  });
  BOOST_TEST_REQUIRE(updates.size() == 4u);
  BOOST_TEST(updates[0].at("content").at("text").as_string() == "use @Alpha");
  BOOST_TEST(updates[1].at("toolCallId").as_string() == "dsh-ref-2");
  BOOST_TEST(updates[1].at("title").as_string() == "Referenced sessions \u00B7 Alpha");
  BOOST_TEST(updates[2].at("content").at("text").as_string() == "ok");
  BOOST_TEST(updates[3].at("content").at("text").as_string() == "next");
}

// Our writers (and 45fc) put the snapshot BEFORE the direct message, in its turn; a recall that does
// not directly follow a direct message waits for the next one, as before.
BOOST_AUTO_TEST_CASE(a_snapshot_before_its_direct_message_still_waits_for_it) {
  auto updates = replay({
      event(0, "turn/start", {{"turn", 1}}),
      text_message(1, "earlier", {{"kind", "user"}}),
      turn_end(2, 1),
      text_message(3, "## Referenced sessions\n\nsnapshot", kRecallSource),
      event(4, "turn/start", {{"turn", 2}}),
      text_message(5, "use @Alpha", {{"kind", "user"}}),
  });
  BOOST_TEST_REQUIRE(updates.size() == 3u);
  BOOST_TEST(updates[0].at("content").at("text").as_string() == "earlier");
  BOOST_TEST(updates[1].at("content").at("text").as_string() == "use @Alpha");
  BOOST_TEST(updates[2].at("toolCallId").as_string() == "dsh-ref-3");
  // Without form:"recall", even right after a direct message, a snapshot is the 45fc kind: it waits.
  json::object plain = kRecallSource;
  plain.erase("form");
  auto held = replay({text_message(0, "a", {{"kind", "user"}}), text_message(1, "snapshot", plain),
                      text_message(2, "b", {{"kind", "user"}})});
  BOOST_TEST_REQUIRE(held.size() == 3u);
  BOOST_TEST(held[1].at("content").at("text").as_string() == "b");
  BOOST_TEST(held[2].at("toolCallId").as_string() == "dsh-ref-1");
}

// messageId (issue 28): derived from the session id and the message's place in the log — the seq
// of a user message or of the turn/end a note replays from, the (turn, step, block) of assistant
// text and reasoning, whether the step streamed chunks or only has its assistant/message — so a
// load shows the ids the live turn sent; the fast path (plain_chunk) gives the same ids as on_event.
BOOST_AUTO_TEST_CASE(message_ids_come_from_the_place_in_the_log) {
  const std::string sid = "session-1";
  auto chunk = [](std::int64_t seq, int step, std::string_view type, int index, std::string_view text) {
    return event(seq, "assistant/chunk",
                 {{"turn", 1}, {"step", step}, {"chunk", {{"type", type}, {"index", index}, {"text", text}}}});
  };
  std::vector<json::object> events{
      text_message(3, "question", {{"kind", "user"}}),
      chunk(4, 1, "reasoning-delta", 0, "hmm "),
      chunk(5, 1, "reasoning-delta", 0, "yes"),
      chunk(6, 1, "text-delta", 1, "an "),
      chunk(7, 1, "text-delta", 1, "answer"),
      surface(8, "assistant/message",
              {{"turn", 1}, {"step", 2}, {"content", json::array{json::object{{"type", "reasoning"}, {"text", "more"}},
                                                                  json::object{{"type", "text"}, {"text", "folded"}}}}}),
      event(9, "turn/end", {{"turn", 1}, {"reason", {{"kind", "interrupted"}}}}),
  };
  auto updates = replay(events, {std::string(kCwd), "", sid});
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& u : updates) got.emplace_back(tag(u), std::string(u.at("messageId").as_string()));
  using handlers::message_id;
  const std::vector<std::pair<std::string, std::string>> expected{
      {"user_message_chunk", message_id(sid, "user/3")},
      {"agent_thought_chunk", message_id(sid, "reasoning/1/1/0")},
      {"agent_thought_chunk", message_id(sid, "reasoning/1/1/0")},
      {"agent_message_chunk", message_id(sid, "text/1/1/1")},
      {"agent_message_chunk", message_id(sid, "text/1/1/1")},
      {"agent_thought_chunk", message_id(sid, "reasoning/1/2/0")},
      {"agent_message_chunk", message_id(sid, "text/1/2/1")},
      {"agent_message_chunk", message_id(sid, "note/9")},
  };
  BOOST_TEST((got == expected));
  // Ids are opaque and UUID-shaped, different per session and per place.
  BOOST_TEST(message_id(sid, "user/3").size() == 36u);
  BOOST_TEST(message_id(sid, "user/3") != message_id("session-2", "user/3"));
  BOOST_TEST(message_id(sid, "user/3") != message_id(sid, "user/4"));

  // The fast path of a replay gives the on_event ids.
  handlers::Replayer fast({std::string(kCwd), "", sid});
  std::string_view text, id;
  BOOST_TEST(fast.plain_chunk(events[1], text, id) == 2u);
  BOOST_TEST(id == message_id(sid, "reasoning/1/1/0"));
  BOOST_TEST(fast.plain_chunk(events[3], text, id) == 1u);
  BOOST_TEST(id == message_id(sid, "text/1/1/1"));
  BOOST_TEST(text == "an ");
}

BOOST_AUTO_TEST_SUITE_END()
