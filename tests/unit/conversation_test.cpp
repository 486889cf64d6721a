// The model request assembled from normalised log events (src/engine/conversation.cpp): tool calls
// and results in OpenAI form, answers paired with their calls, dangling calls and stray results, refused
// turns, the request-side text join, image placeholders.
#include "engine/compaction.hpp"
#include "engine/conversation.hpp"
#include "llm/token_estimate.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>

using namespace acp;
namespace json = boost::json;

namespace {

json::object text(std::string_view t) { return {{"type", "text"}, {"text", t}}; }
json::object call(std::string_view id, std::string_view name, std::string_view args) {
  return {{"type", "tool-call"}, {"id", id}, {"name", name}, {"arguments", args}};
}

// A log fed event by event, in the normalised (45fc) shapes.
struct Log {
  engine::Conversation conversation;
  std::int64_t seq = 0;
  std::int64_t turn = 0;

  std::int64_t add(std::string_view type, json::object data, std::optional<json::object> surface_op = {}) {
    json::object e{{"type", type}, {"seq", seq}, {"time", 1700000000000 + seq}, {"data", std::move(data)}};
    if (surface_op) e["surfaceOp"] = std::move(*surface_op);
    conversation.observe(e);
    return seq++;
  }
  void start(std::string_view prompt) {
    add("turn/start", {{"turn", ++turn}, {"trigger", {{"kind", "message"}}}});
    add("user/message", {{"content", json::array{text(prompt)}}, {"source", {{"kind", "user"}}}});
  }
  void end(json::object reason = {{"kind", "completed"}}) { add("turn/end", {{"turn", turn}, {"reason", reason}}); }
  void assistant(json::array content, std::int64_t step = 1) {
    add("assistant/message", {{"turn", turn},
                              {"step", step},
                              {"content", std::move(content)},
                              {"provenance", {{"provider", "deepseek"}, {"model", "deepseek-flash"}}}});
  }
  void result(std::string_view id, json::array content, std::int64_t step = 1, bool error = false) {
    add("tool/call", {{"turn", turn}, {"step", step}, {"callId", id}, {"name", "read"}, {"arguments", "{}"}});
    add("tool/result",
        {{"turn", turn}, {"step", step}, {"callId", id}, {"content", std::move(content)}, {"isError", error}});
  }
};

// One line per message: role, text, then calls or the answered call, so a failure shows the whole request.
std::vector<std::string> lines(const std::vector<llm::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) {
    std::string line = std::string(llm::role_name(m.role)) + " [" + m.text + "]";
    for (const auto& c : m.tool_calls) line += " call " + c.id + " " + c.name + " " + c.arguments;
    if (m.role == llm::Role::tool) line += " answers " + m.tool_call_id;
    out.push_back(std::move(line));
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(conversation)

BOOST_AUTO_TEST_CASE(tool_calls_and_results_go_in_openai_form_across_two_steps) {
  Log log;
  log.start("fix the config");
  log.assistant({json::object{{"type", "reasoning"}, {"text", "look first"}}, text("Reading "), text("it."),
                 call("c1", "read", R"({"path":"a.json"})")});
  log.result("c1", {text("{\"x\":1}")});
  log.assistant({call("c2", "edit", R"({"path":"a.json","x":2})")}, 2);
  log.result("c2", {text("edited")}, 2);
  log.assistant({text("Done.")}, 3);
  log.end();
  log.start("thanks");
  std::vector<std::string> expected{
      "user [fix the config]",
      R"(assistant [Reading it.] call c1 read {"path":"a.json"})",
      R"(tool [{"x":1}] answers c1)",
      R"(assistant [] call c2 edit {"path":"a.json","x":2})",
      "tool [edited] answers c2",
      "assistant [Done.]",
      "user [thanks]",
  };
  BOOST_TEST(lines(log.conversation.messages()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(two_calls_in_one_step_are_answered_right_after_it_in_surface_order) {
  Log log;
  log.start("look around");
  log.assistant({call("a", "read", "{\"path\":\"x\"}"), call("b", "bash", "{\"cmd\":\"ls\"}")});
  log.result("b", {text("x y")}, 1, true);
  // A steering message between the two results: the answer still goes right after its call.
  log.add("steering/message", {{"turn", 1}, {"content", json::array{text("hurry")}}, {"source", {{"kind", "user"}}}});
  log.result("a", {});  // no output
  log.assistant({text("Both done.")}, 2);
  log.end();
  std::vector<std::string> expected{
      "user [look around]",
      R"(assistant [] call a read {"path":"x"} call b bash {"cmd":"ls"})",
      "tool [x y] answers b",
      "tool [(no output)] answers a",
      "user [hurry]",
      "assistant [Both done.]",
  };
  BOOST_TEST(lines(log.conversation.messages()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(dangling_call_is_answered_and_stray_results_are_left_out) {
  Log log;
  log.start("run it");
  log.assistant({text("Running."), call("gone", "bash", "{}")});
  log.end({{"kind", "aborted"}});
  log.start("again");
  // A result for a call that is not on the surface, and a second result for an answered call.
  log.result("nobody", {text("orphan")});
  log.assistant({call("c", "read", "{}")});
  log.result("c", {text("first")});
  log.result("c", {text("second")});
  log.end();
  std::vector<std::string> expected{
      "user [run it]",
      "assistant [Running.] call gone bash {}",
      "tool [" + std::string(engine::kNoToolResult) + "] answers gone",
      "user [again]",
      "assistant [] call c read {}",
      "tool [first] answers c",
  };
  BOOST_TEST(lines(log.conversation.messages()) == expected, boost::test_tools::per_element());
  // A range that ends between a call and its result answers the call all the same.
  auto upto_call = log.conversation.messages(0, 5);
  BOOST_REQUIRE_EQUAL(upto_call.size(), 6u);
  BOOST_TEST(lines(upto_call).back() == "tool [" + std::string(engine::kNoToolResult) + "] answers c");
}

BOOST_AUTO_TEST_CASE(refused_turn_leaves_with_its_calls_and_results) {
  Log log;
  log.start("fine");
  log.assistant({text("ok")});
  log.end();
  log.start("forbidden");
  log.assistant({call("r", "read", "{}")});
  log.result("r", {text("secret")});
  log.end({{"kind", "error"}, {"step", 2}, {"failure", {{"message", "model stopped: content_filter"}, {"code", "CONTENT_FILTER"}}}});
  log.start("next");
  std::vector<std::string> expected{"user [fine]", "assistant [ok]", "user [next]"};
  BOOST_TEST(lines(log.conversation.messages()) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(checkpoint_blocks_join_with_nothing_in_the_request_only) {
  Log log;
  log.start("one");
  log.assistant({text("answer")});
  log.end();
  const json::array blocks{text("Preamble.\n\n<compacted-summary>"), text("## Goal\n- g"), text("</compacted-summary>")};
  log.add("turn/start", {{"turn", ++log.turn}});
  log.add("user/message", {{"content", blocks}, {"source", {{"kind", "plugin"}, {"plugin", "compact"}}}},
          json::object{{"op", "replace"}, {"start", 1}, {"end", 2}});
  log.end();
  auto messages = log.conversation.messages();
  BOOST_REQUIRE_EQUAL(messages.size(), 1u);
  BOOST_TEST(messages[0].text == "Preamble.\n\n<compacted-summary>## Goal\n- g</compacted-summary>");
  BOOST_TEST(log.conversation.surface().front().checkpoint);
  // Replay and reference projection keep the '\n' join.
  BOOST_TEST(engine::content_text(blocks) == "Preamble.\n\n<compacted-summary>\n## Goal\n- g\n</compacted-summary>");
}

BOOST_AUTO_TEST_CASE(images_are_omitted_with_a_placeholder_in_their_place) {
  const std::string id = "sha256:" + std::string(64, 'a');
  json::object named{{"type", "image"},
                     {"attachment", {{"attachmentId", id}, {"mediaType", "image/png"}, {"width", 10}, {"height", 20},
                                     {"bytes", 2048}, {"name", "shot.png"}}}};
  json::object unnamed{{"type", "image"},
                       {"attachment", {{"attachmentId", id}, {"mediaType", "image/jpeg"}, {"bytes", 7.0}}}};
  BOOST_TEST(engine::request_text(json::array{text("look at "), named, text(" and "), unnamed}) ==
             "look at [image: shot.png, image/png, 2048 bytes omitted] and [image: " + id +
                 ", image/jpeg, 7 bytes omitted]");
  BOOST_TEST(engine::request_text(json::array{json::object{{"type", "image"}}}) == "[image omitted]");
  // In a user message, an assistant message and a tool result alike (an image-only result is not "(no output)").
  Log log;
  log.add("turn/start", {{"turn", ++log.turn}});
  log.add("user/message", {{"content", json::array{text("see"), named}}, {"source", {{"kind", "user"}}}});
  log.assistant({call("i", "read_image", "{}")});
  log.result("i", {unnamed});
  log.assistant({named}, 2);
  log.end();
  auto l = lines(log.conversation.messages());
  BOOST_REQUIRE_EQUAL(l.size(), 4u);
  BOOST_TEST(l[0] == "user [see[image: shot.png, image/png, 2048 bytes omitted]]");
  BOOST_TEST(l[2] == "tool [[image: " + id + ", image/jpeg, 7 bytes omitted]] answers i");
  BOOST_TEST(l[3] == "assistant [[image: shot.png, image/png, 2048 bytes omitted]]");
}

// The summariser's request leaves out its oldest messages to fit the window; a call's answers go with it,
// so the request never starts with a tool message.
BOOST_AUTO_TEST_CASE(summary_request_drops_a_call_with_its_answers) {
  Log log;
  log.start("u1");
  log.assistant({call("c1", "write", std::string(30000, 'x'))});
  log.result("c1", {text("written")});
  log.assistant({text("done1")}, 2);
  log.end();
  log.start("u2");
  log.assistant({text("a2")});
  log.end();
  log.start("u3");
  std::string why;
  auto plan = engine::plan_compaction(log.conversation, {1, 1}, why);
  BOOST_REQUIRE_MESSAGE(plan, why);
  BOOST_TEST(plan->bytes == 2 + 2 + 5 + 30000 + 7 + 2 + 5 + 2 + 2);  // call id, name and arguments count
  auto full = engine::summary_request(log.conversation, *plan, "m", "", std::nullopt);
  BOOST_TEST(full.messages.size() == 1 + 6 + 1u);
  auto fitted = engine::summary_request(log.conversation, *plan, "m", "", 4000);
  std::vector<std::string> expected{"assistant [done1]", "user [u2]", "assistant [a2]"};
  auto l = lines(fitted.messages);
  BOOST_TEST(std::vector<std::string>(l.begin() + 1, l.end() - 1) == expected, boost::test_tools::per_element());
  BOOST_TEST(llm::estimate_request_tokens(fitted.messages) <= 4000);
}

BOOST_AUTO_TEST_SUITE_END()
