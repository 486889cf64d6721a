#include "engine/engine.hpp"
#include "handlers/prompt_text.hpp"
#include "llm/echo_provider.hpp"
#include "protocol/jsonrpc.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp;

BOOST_AUTO_TEST_SUITE(echo_model)

// The first 48 characters (docs/decisions.md#the-echo-model); the example the rule first came with cut at 46 (after
// "an u"), and the rule wins.
BOOST_AUTO_TEST_CASE(answer_lists_every_message_as_contracts_section_3) {
  llm::Request r;
  r.messages = {{llm::Role::system, std::string(412, 's')},
                {llm::Role::user, "## Referenced sessions\n\nThe JSON below is an untrusted snapshot of"},
                {llm::Role::user, "use @Alpha"}};
  BOOST_TEST(llm::echo_answer(r) ==
             "echo: received 3 messages\n"
             "[1] system 412 bytes\n"
             "[2] user 66 bytes: ## Referenced sessions\u23CE\u23CEThe JSON below is an unt\u2026\n"
             "[3] user 10 bytes: use @Alpha\n"
             "last user message: use @Alpha");
}

// Sizes and previews are of the text: an assistant message with only tool calls is 0 bytes, and tool
// messages are listed like any other.
BOOST_AUTO_TEST_CASE(tool_messages_are_listed_and_calls_count_no_text) {
  llm::Request r;
  r.messages = {{llm::Role::system, "s"},
                {llm::Role::user, "read it"},
                {llm::Role::assistant, "", {{"c1", "read", R"({"path":"a"})"}}},
                {llm::Role::tool, "line one\nline two", {}, "c1"},
                {llm::Role::user, "thanks"}};
  BOOST_TEST(llm::echo_answer(r) ==
             "echo: received 5 messages\n"
             "[1] system 1 bytes\n"
             "[2] user 7 bytes: read it\n"
             "[3] assistant 0 bytes: \n"
             "[4] tool 17 bytes: line one\u23CEline two\n"
             "[5] user 6 bytes: thanks\n"
             "last user message: thanks");
}

BOOST_AUTO_TEST_CASE(sleep_directives_are_read_and_clamped_to_a_minute) {
  using std::chrono::milliseconds;
  BOOST_TEST(llm::echo_sleep("wait [[echo:sleep=250]] please").count() == 250);
  BOOST_TEST(llm::echo_sleep("[[sleep:1500]]").count() == 1500);
  BOOST_TEST(llm::echo_sleep("[[echo:sleep=60000]]").count() == 60000);
  BOOST_TEST(llm::echo_sleep("[[echo:sleep=60001]]").count() == 60000);
  BOOST_TEST(llm::echo_sleep("[[echo:sleep=1000000000]]").count() == 60000);
  BOOST_TEST(llm::echo_sleep("[[sleep:" + std::string(40, '9') + "]]").count() == 60000);  // no overflow
  BOOST_TEST(llm::echo_sleep("[[echo:sleep=]] [[echo:sleep=1e9]] [[echo:sleep=5").count() == 0);
  BOOST_TEST(llm::echo_sleep("[[echo:sleep=x]] [[[echo:sleep=7]]").count() == 7);  // the first well-formed one
  BOOST_TEST(llm::echo_sleep("no directive").count() == 0);
}

BOOST_AUTO_TEST_CASE(preview_counts_characters_not_bytes) {
  llm::Request r;
  r.messages = {{llm::Role::user, std::string(16, 'a') + std::string("\xE2\x82\xAC") + std::string(40, 'b')}};
  std::string answer = llm::echo_answer(r);
  BOOST_TEST(answer.find(": " + std::string(16, 'a') + "\xE2\x82\xAC" + std::string(31, 'b') + "\u2026\n") !=
             std::string::npos);
  BOOST_TEST(answer.find("[1] user 59 bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(summary_is_deterministic_and_bounded) {
  llm::Request r;
  r.purpose = llm::Purpose::summary;
  r.messages = {{llm::Role::system, "summarise"}, {llm::Role::user, "first question\nwith two lines"},
                {llm::Role::assistant, "answer"}, {llm::Role::user, "Write the checkpoint summary now.\nFocus: keep names"}};
  BOOST_TEST(llm::echo_summary(r) ==
             "## Goal\n- echo summary of 2 messages, 35 bytes\n"
             "## Focus\n- keep names\n"
             "## Messages\n"
             "- [1] user 29 bytes: first question\u23CEwith two lines\n"
             "- [2] assistant 6 bytes: answer");
  // Ten messages: the first and last three, and how many are left out.
  r.messages = {{llm::Role::system, "s"}};
  for (int i = 1; i <= 10; ++i) r.messages.push_back({i % 2 ? llm::Role::user : llm::Role::assistant, "m" + std::to_string(i)});
  r.messages.push_back({llm::Role::user, "Write the checkpoint summary now."});
  BOOST_TEST(llm::echo_summary(r) ==
             "## Goal\n- echo summary of 10 messages, 21 bytes\n"
             "## Messages\n"
             "- [1] user 2 bytes: m1\n- [2] assistant 2 bytes: m2\n- [3] user 2 bytes: m3\n"
             "- \u2026 4 more\n"
             "- [8] assistant 2 bytes: m8\n- [9] user 2 bytes: m9\n- [10] assistant 3 bytes: m10");
}

BOOST_AUTO_TEST_CASE(chunks_end_after_each_space) {
  auto chunks = llm::echo_chunks("a b\nc  d");
  std::vector<std::string> expected{"a ", "b\nc ", " ", "d"};
  BOOST_TEST(chunks == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(tool_directives_become_calls_once_per_user_message) {
  using namespace acp::llm;
  Request req;
  req.messages = {{Role::system, "sys"},
                  {Role::user, R"(go [[echo:tool=read {"file_path":"a]]b.txt"}]] then [[echo:tool=bash  {"command":"ls"} ]] and [[echo:tool=grep {bad]])"}};
  BOOST_TEST(echo_tool_calls(req).empty());  // no tools offered
  req.tools = {{"read", "", ""}};
  auto calls = echo_tool_calls(req);
  BOOST_REQUIRE(calls.size() == 3u);
  BOOST_TEST(calls[0].id == "echo_0_0");
  BOOST_TEST(calls[0].name == "read");
  BOOST_TEST(calls[0].arguments == R"({"file_path":"a]]b.txt"})");
  BOOST_TEST(calls[1].name == "bash");
  BOOST_TEST(calls[1].arguments == R"({"command":"ls"})");
  BOOST_TEST(calls[2].arguments == "{bad");  // malformed JSON passes through, for error-path tests
  // Once results follow the user message, the model answers instead of calling again.
  req.messages.push_back({Role::assistant, "", calls});
  req.messages.push_back({Role::tool, "contents", {}, "echo_0_0"});
  BOOST_TEST(echo_tool_calls(req).empty());
  // A new user message with a directive: ids go on from the assistant messages so far.
  req.messages.push_back({Role::assistant, "done"});
  req.messages.push_back({Role::user, "[[echo:tool=read]]"});
  auto next = echo_tool_calls(req);
  BOOST_REQUIRE(next.size() == 1u);
  BOOST_TEST(next[0].id == "echo_2_0");
  BOOST_TEST(next[0].arguments == "{}");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(prompt_text)

BOOST_AUTO_TEST_CASE(blocks_render_into_the_user_text) {
  using namespace protocol;
  std::vector<ContentBlock> prompt{TextContent{"see", {}, {}},
                                   ResourceLink{"file:///a \"b\"", "a\"b", {}, {}, {}, {}, {}, {}},
                                   EmbeddedResource{ResourceContents{"file:///c", std::string("body"), {}, {}, {}}, {}, {}}};
  BOOST_TEST(handlers::render_prompt(prompt).text ==
             "see\n[resource_link name=\"a\\\"b\" uri=\"file:///a \\\"b\\\"\"]\n\n[resource uri=\"file:///c\"]\nbody\n");
}

BOOST_AUTO_TEST_CASE(unsupported_and_blank_prompts_are_invalid_params) {
  using namespace protocol;
  auto code_path = [](std::vector<ContentBlock> prompt) -> std::string {
    try {
      handlers::render_prompt(prompt);
    } catch (const jsonrpc::RpcError& e) {
      return std::to_string(e.code()) + " " + std::string(e.data()->at("path").as_string());
    }
    return "accepted";
  };
  // Images are taken (promptCapabilities.image), but only real ones: one byte is no PNG.
  BOOST_TEST(code_path({TextContent{"x", {}, {}}, ImageContent{"AA==", "image/png", {}, {}, {}}}) == "-32602 /prompt/1/data");
  BOOST_TEST(code_path({AudioContent{"AA==", "audio/wav", {}, {}}}) == "-32602 /prompt/0/type");
  BOOST_TEST(code_path({EmbeddedResource{ResourceContents{"u", {}, std::string("AA=="), {}, {}}, {}, {}}}) ==
             "-32602 /prompt/0/resource");
  BOOST_TEST(code_path({TextContent{" \t\n\u00A0\u3000", {}, {}}}) == "-32602 /prompt");
  BOOST_TEST(code_path({}) == "-32602 /prompt");
}

BOOST_AUTO_TEST_CASE(system_prompt_placeholders_are_replaced) {
  std::string s = engine::render_system_prompt("in {cwd} on {date}.", "/w");
  BOOST_TEST(s.rfind("in /w on 20", 0) == 0u);
  BOOST_TEST(s.size() == std::string("in /w on YYYY-MM-DD.").size());
}

BOOST_AUTO_TEST_SUITE_END()
