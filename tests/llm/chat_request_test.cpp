// Request body and the consecutive-user-message merge of docs/decisions.md#references-on-the-wire.
#include "llm/openai/chat_request.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::llm;
namespace json = boost::json;

BOOST_AUTO_TEST_SUITE(chat_request)

BOOST_AUTO_TEST_CASE(body_has_model_messages_and_streaming_options) {
  std::vector<Message> msgs{{Role::system, "be brief"}, {Role::user, "hi \"there\"\n"}, {Role::assistant, "hello"}};
  auto v = json::parse(build_chat_request_body("deepseek-flash", msgs));
  BOOST_TEST(v.at("model").as_string() == "deepseek-flash");
  BOOST_TEST(v.at("stream").as_bool());
  BOOST_TEST(v.at("stream_options").at("include_usage").as_bool());
  const auto& m = v.at("messages").as_array();
  BOOST_REQUIRE(m.size() == 3u);
  BOOST_TEST(m[0].at("role").as_string() == "system");
  BOOST_TEST(m[1].at("role").as_string() == "user");
  BOOST_TEST(m[1].at("content").as_string() == "hi \"there\"\n");
  BOOST_TEST(m[2].at("role").as_string() == "assistant");
  BOOST_TEST(m[2].as_object().size() == 2u);
}

// The body is written directly (no JSON copy of the conversation); it must be the very text that
// serializing the JSON object gives, escapes included, with large strings crossing buffer boundaries.
BOOST_AUTO_TEST_CASE(body_text_equals_the_serialized_object) {
  std::string big(100000, 'a');
  for (std::size_t i = 0; i < big.size(); i += 997) big[i] = i % 2 ? '"' : '\n';
  std::vector<Message> msgs{{Role::system, std::string("ctl \x01\x1f\x7f tab\t \\ / \u00e9\u20ac\U0001F600")},
                            {Role::user, big}, {Role::assistant, ""}, {Role::user, std::string("nul\0end", 7)},
                            {Role::assistant, "calling", {{"c\"1", "read", R"({"path":"a\nb"})"}, {"c2", "bash", big}}},
                            {Role::tool, big, {}, "c\"1"}, {Role::tool, "", {}, "c2"}};
  for (std::string model : {"m\"1\\", ""}) {
    json::object body;
    if (!model.empty()) body["model"] = model;
    json::array arr;
    for (const auto& m : msgs) {
      json::object o{{"role", role_name(m.role)}};
      if (m.role == Role::tool) o["tool_call_id"] = m.tool_call_id;
      o["content"] = m.text;
      if (!m.tool_calls.empty()) {
        json::array calls;
        for (const auto& c : m.tool_calls)
          calls.push_back(json::object{{"id", c.id}, {"type", "function"},
                                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        o["tool_calls"] = std::move(calls);
      }
      arr.push_back(std::move(o));
    }
    body["messages"] = std::move(arr);
    body["stream"] = true;
    body["stream_options"] = json::object{{"include_usage", true}};
    BOOST_TEST(build_chat_request_body(model, msgs) == json::serialize(body));
  }
}

// As the harness sends them: content "" (never null) beside tool_calls, arguments the raw string, and
// a tool message's tool_call_id ahead of its content.
BOOST_AUTO_TEST_CASE(tool_calls_and_tool_messages_have_the_openai_shape) {
  std::vector<Message> msgs{{Role::user, "go"},
                            {Role::assistant, "", {{"call_1", "read", R"({"path":"x"})"}}},
                            {Role::tool, "content of x", {}, "call_1"}};
  BOOST_TEST(build_chat_request_body("", msgs) ==
             R"({"messages":[{"role":"user","content":"go"},)"
             R"({"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function",)"
             R"("function":{"name":"read","arguments":"{\"path\":\"x\"}"}}]},)"
             R"({"role":"tool","tool_call_id":"call_1","content":"content of x"}],)"
             R"("stream":true,"stream_options":{"include_usage":true}})");
  // The merge for servers refusing consecutive user messages leaves them alone.
  BOOST_TEST(merge_consecutive_user_messages(msgs)[1].tool_calls.size() == 1u);
}

BOOST_AUTO_TEST_CASE(offered_tools_are_functions_with_their_schemas) {
  std::vector<Message> msgs{{Role::user, "hi"}};
  std::vector<ToolDefinition> tools{{"read", "Read \"a\" file", R"({"type":"object","properties":{"file_path":{"type":"string"}}})"},
                                    {"noop", "", ""}};
  auto v = json::parse(build_chat_request_body("m", msgs, std::nullopt, tools));
  const auto& t = v.at("tools").as_array();
  BOOST_REQUIRE(t.size() == 2u);
  BOOST_TEST(t[0].at("type").as_string() == "function");
  BOOST_TEST(t[0].at("function").at("name").as_string() == "read");
  BOOST_TEST(t[0].at("function").at("description").as_string() == "Read \"a\" file");
  BOOST_TEST(t[0].at("function").at("parameters").at("properties").at("file_path").at("type").as_string() == "string");
  BOOST_TEST(t[1].at("function").at("parameters").at("type").as_string() == "object");
  BOOST_TEST(!json::parse(build_chat_request_body("m", msgs)).as_object().contains("tools"));
}

BOOST_AUTO_TEST_CASE(empty_model_is_omitted) {
  auto v = json::parse(build_chat_request_body("", {{Role::user, "x"}}));
  BOOST_TEST(!v.as_object().contains("model"));
}

// A user message's loaded images become image_url parts where their placeholders stood; an image
// not loaded keeps its placeholder text; a message without loaded images stays a string.
BOOST_AUTO_TEST_CASE(loaded_images_are_image_url_parts_in_place) {
  Message user{Role::user, "see [P1] and [P2] ok"};
  user.images.push_back({4, 4, "{}", "image/png", std::make_shared<const std::string>("abc")});
  user.images.push_back({13, 4, "{}", "image/gif", nullptr});
  Message plain{Role::user, "only [P] text"};
  plain.images.push_back({5, 3, "{}", "image/png", nullptr});
  auto v = json::parse(build_chat_request_body("m", {user, plain}));
  const auto& m = v.at("messages").as_array();
  BOOST_TEST(json::serialize(m[0].at("content")) ==
             R"([{"type":"text","text":"see "},{"type":"image_url","image_url":{"url":"data:image/png;base64,YWJj"}},)"
             R"({"type":"text","text":" and [P2] ok"}])");
  BOOST_TEST(m[1].at("content").as_string() == "only [P] text");

  // Joined for a server that refuses consecutive user messages: the second message's images move with its text.
  Message second{Role::user, "[Q]"};
  second.images.push_back({0, 3, "{}", "image/webp", std::make_shared<const std::string>("xy")});
  const auto merged = merge_consecutive_user_messages({plain, second});
  BOOST_REQUIRE(merged.size() == 1u);
  BOOST_TEST(merged[0].text == "only [P] text\n\n[Q]");
  BOOST_REQUIRE(merged[0].images.size() == 2u);
  BOOST_TEST(merged[0].images[1].at == 15u);
  auto joined = json::parse(build_chat_request_body("", merged));
  BOOST_TEST(json::serialize(joined.at("messages").at(0).at("content")) ==
             R"([{"type":"text","text":"only [P] text\n\n"},{"type":"image_url","image_url":{"url":"data:image/webp;base64,eHk="}}])");
}

BOOST_AUTO_TEST_CASE(merge_joins_runs_of_user_messages_with_a_blank_line) {
  std::vector<Message> msgs{{Role::system, "s"},    {Role::user, "ref"},   {Role::user, "ask"},
                            {Role::assistant, "a"}, {Role::user, "one"},   {Role::user, "two"},
                            {Role::user, "three"},  {Role::assistant, "b"}};
  BOOST_TEST(has_consecutive_user_messages(msgs));
  auto merged = merge_consecutive_user_messages(msgs);
  BOOST_REQUIRE(merged.size() == 5u);
  BOOST_TEST(merged[1].text == "ref\n\nask");
  BOOST_TEST((merged[3].role == Role::user));
  BOOST_TEST(merged[3].text == "one\n\ntwo\n\nthree");
  BOOST_TEST((merged[4].role == Role::assistant));
  BOOST_TEST(!has_consecutive_user_messages(merged));
}

BOOST_AUTO_TEST_CASE(merge_leaves_alternating_conversations_and_system_runs_alone) {
  std::vector<Message> msgs{{Role::system, "s1"}, {Role::system, "s2"}, {Role::user, "u"}, {Role::assistant, "a"}};
  BOOST_TEST(!has_consecutive_user_messages(msgs));
  auto merged = merge_consecutive_user_messages(msgs);
  BOOST_TEST(merged.size() == 4u);
}

BOOST_AUTO_TEST_SUITE_END()
