// The ask_user tool: its arguments checked against the bounds, the answer as the model reads it, and
// the elicitation/create request and answer as they cross the wire (handlers/ask_user.hpp).
#include "engine/ask_user.hpp"
#include "handlers/ask_user.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

namespace json = boost::json;
using acp::engine::UserAnswer;
using acp::engine::UserQuestion;

namespace {
std::string error_of(const std::string& arguments) {
  auto read = acp::engine::read_user_question("call_1", arguments);
  const std::string* error = std::get_if<std::string>(&read);
  return error ? *error : std::string();
}
} // namespace

BOOST_AUTO_TEST_SUITE(ask_user)

BOOST_AUTO_TEST_CASE(arguments_within_bounds_make_a_question) {
  auto read = acp::engine::read_user_question("call_1", R"({"question":"Which one?","choices":["a","b"]})");
  BOOST_REQUIRE(std::holds_alternative<UserQuestion>(read));
  const UserQuestion& q = std::get<UserQuestion>(read);
  BOOST_TEST(q.call_id == "call_1");
  BOOST_TEST(q.question == "Which one?");
  BOOST_TEST(q.choices == (std::vector<std::string>{"a", "b"}), boost::test_tools::per_element());
  auto free_text = acp::engine::read_user_question("c", R"({"question":"Why?","choices":null})");
  BOOST_REQUIRE(std::holds_alternative<UserQuestion>(free_text));
  BOOST_TEST(std::get<UserQuestion>(free_text).choices.empty());
}

BOOST_AUTO_TEST_CASE(arguments_out_of_bounds_are_the_models_error) {
  BOOST_TEST(error_of("not json").find("not a JSON object") != std::string::npos);
  BOOST_TEST(error_of("[1]").find("not a JSON object") != std::string::npos);
  BOOST_TEST(error_of("{}").find("`question` must be a non-empty string") != std::string::npos);
  BOOST_TEST(error_of(R"({"question":7})").find("`question` must be") != std::string::npos);
  const std::string long_question = json::serialize(json::object{{"question", std::string(4097, 'x')}});
  BOOST_TEST(error_of(long_question).find("longer than 4096 bytes") != std::string::npos);
  const std::string longest = json::serialize(json::object{{"question", std::string(4096, 'x')}});
  BOOST_TEST(error_of(longest).empty());
  json::array many;
  for (int i = 0; i < 21; ++i) many.push_back(json::string("c" + std::to_string(i)));
  BOOST_TEST(error_of(json::serialize(json::object{{"question", "q"}, {"choices", many}})).find("at most 20 choices") !=
             std::string::npos);
  many.pop_back();
  BOOST_TEST(error_of(json::serialize(json::object{{"question", "q"}, {"choices", many}})).empty());
  BOOST_TEST(error_of(R"({"question":"q","choices":["a","a"]})").find("given twice") != std::string::npos);
  BOOST_TEST(error_of(R"({"question":"q","choices":[""]})").find("non-empty string") != std::string::npos);
  BOOST_TEST(error_of(R"({"question":"q","choices":"a"})").find("array of strings") != std::string::npos);
  BOOST_TEST(error_of(R"({"question":"q","urgent":true})").find("unknown parameter `urgent`") != std::string::npos);
  BOOST_TEST(error_of(json::serialize(json::object{{"question", "q"}, {"choices", json::array{std::string(201, 'c')}}}))
                 .find("longer than 200 bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_answer_as_the_model_reads_it) {
  auto outcome = [](UserAnswer::Kind kind, std::string text, std::size_t max = 1000) {
    return acp::engine::user_answer_outcome(UserAnswer{kind, std::move(text)}, max);
  };
  BOOST_TEST(outcome(UserAnswer::Kind::answered, "blue").text == "The user answered: blue");
  BOOST_TEST(!outcome(UserAnswer::Kind::answered, "blue").is_error);
  BOOST_TEST(outcome(UserAnswer::Kind::declined, "").text == "The user declined to answer.");
  BOOST_TEST(outcome(UserAnswer::Kind::dismissed, "").text == "The user closed the question without answering.");
  const auto cancelled = outcome(UserAnswer::Kind::cancelled, "");
  BOOST_TEST((cancelled.is_error && cancelled.cancelled));
  const auto failed = outcome(UserAnswer::Kind::failed, "Method not found");
  BOOST_TEST(failed.is_error);
  BOOST_TEST(failed.text.find("Method not found") != std::string::npos);
  // The user's text is bounded and made valid UTF-8 without splitting a character.
  BOOST_TEST(outcome(UserAnswer::Kind::answered, "ab\xff").text == "The user answered: ab\xEF\xBF\xBD");
  BOOST_TEST(outcome(UserAnswer::Kind::answered, "a\xC3\xA9xyz", 2).text == "The user answered: a");
}

BOOST_AUTO_TEST_CASE(the_request_is_a_one_field_form_on_the_asking_call) {
  const json::value params = acp::handlers::elicitation_params("s1", UserQuestion{"call_9", "Which?", {"x", "y"}});
  const json::value expected = json::parse(R"({"sessionId":"s1","toolCallId":"call_9","mode":"form","message":"Which?",
    "requestedSchema":{"type":"object","properties":{"answer":{"type":"string","title":"Your choice","enum":["x","y"]}},
    "required":["answer"]}})");
  BOOST_TEST(params == expected);
  const json::value free = acp::handlers::elicitation_params("s1", UserQuestion{"c", "Why?", {}});
  BOOST_TEST(!free.at("requestedSchema").at("properties").at("answer").as_object().contains("enum"));
}

BOOST_AUTO_TEST_CASE(answers_are_read_fail_closed) {
  using Kind = UserAnswer::Kind;
  auto read = [](const char* text) { return acp::handlers::read_elicitation_answer(json::parse(text)); };
  BOOST_TEST((read(R"({"action":"accept","content":{"answer":"red"}})").kind == Kind::answered));
  BOOST_TEST(read(R"({"action":"accept","content":{"answer":"red"}})").text == "red");
  BOOST_TEST(read(R"({"action":"accept","content":{"answer":["a","b"]}})").text == "a\nb");
  BOOST_TEST(read(R"({"action":"accept","content":{"answer":3}})").text == "3");
  BOOST_TEST((read(R"({"action":"accept"})").kind == Kind::dismissed));
  BOOST_TEST((read(R"({"action":"accept","content":{"other":"x"}})").kind == Kind::dismissed));
  BOOST_TEST((read(R"({"action":"decline"})").kind == Kind::declined));
  BOOST_TEST((read(R"({"action":"cancel"})").kind == Kind::dismissed));
  BOOST_TEST((read(R"({"action":"_custom"})").kind == Kind::dismissed));
  BOOST_TEST((read(R"({"content":{}})").kind == Kind::failed));
  BOOST_TEST((read(R"([])").kind == Kind::failed));
}

// A client that does not keep to the form's choices: the model never reads its answer as the user's choice.
BOOST_AUTO_TEST_CASE(an_answer_outside_the_choices_is_not_taken) {
  using Kind = UserAnswer::Kind;
  const std::vector<std::string> choices{"keep", "drop"};
  auto read = [&](const char* text) { return acp::handlers::read_elicitation_answer(json::parse(text), choices); };
  BOOST_TEST((read(R"({"action":"accept","content":{"answer":"drop"}})").kind == Kind::answered));
  BOOST_TEST(read(R"({"action":"accept","content":{"answer":"drop"}})").text == "drop");
  for (const char* outside : {R"({"action":"accept","content":{"answer":"delete everything"}})",
                              R"({"action":"accept","content":{"answer":"Drop"}})",
                              R"({"action":"accept","content":{"answer":["keep","drop"]}})",
                              R"({"action":"accept","content":{"answer":1}})"}) {
    const UserAnswer a = read(outside);
    BOOST_TEST((a.kind == Kind::failed), outside);
    BOOST_TEST(a.text.find("not one of the choices") != std::string::npos);
  }
  BOOST_TEST((read(R"({"action":"decline"})").kind == Kind::declined));
}

BOOST_AUTO_TEST_CASE(only_form_clients_are_asked) {
  auto caps = [](const char* text) { return acp::handlers::client_elicits_forms(json::parse(text).as_object()); };
  BOOST_TEST(caps(R"({"elicitation":{"form":{}}})"));
  BOOST_TEST(!caps(R"({"elicitation":{"url":{}}})"));
  BOOST_TEST(!caps(R"({"elicitation":{"form":null}})"));
  BOOST_TEST(!caps(R"({})"));
}

// docs/tools.md states the parameters the model sees, like the built-in tools'.
BOOST_AUTO_TEST_CASE(the_docs_state_its_parameters) {
  std::ifstream in(std::string(DSH_SCHEMA_DIR) + "/../docs/tools.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const json::value params = json::parse(acp::engine::ask_user_definition().parameters);
  BOOST_TEST(json::value_to<std::vector<std::string>>(params.at("required")) == std::vector<std::string>{"question"},
             boost::test_tools::per_element());
  BOOST_TEST(params.at("properties").as_object().size() == 2u);
  BOOST_TEST(ss.str().find("`ask_user {question, choices?}`") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
