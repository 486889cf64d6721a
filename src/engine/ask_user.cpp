#include "engine/ask_user.hpp"

#include "support/json_text.hpp"
#include "support/utf8.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace acp::engine {

namespace json = boost::json;

const llm::ToolDefinition& ask_user_definition() {
  static const llm::ToolDefinition def = [] {
    json::object choices{{"type", "array"},
                         {"items", {{"type", "string"}, {"maxLength", kMaxChoiceBytes}}},
                         {"maxItems", kMaxChoices},
                         {"description", "The answers to choose from, when the answer is one of a few options; "
                                         "omit for a free-text answer"}};
    json::object params{
        {"type", "object"},
        {"properties",
         {{"question", {{"type", "string"}, {"maxLength", kMaxQuestionBytes}, {"description", "The question, as the user will read it"}}},
          {"choices", std::move(choices)}}},
        {"required", json::array{"question"}},
        {"additionalProperties", false}};
    return llm::ToolDefinition{
        std::string(kAskUserTool),
        "Ask the user a question and wait for the answer. Use it when you need a decision or a fact only the "
        "user has, not for anything you can find out yourself. The user may decline to answer.",
        json::serialize(params)};
  }();
  return def;
}

std::variant<UserQuestion, std::string> read_user_question(std::string call_id, const std::string& arguments) {
  const std::string prefix = "Error: ask_user: ";
  boost::system::error_code ec;
  const json::value args = support::parse_json(arguments, ec);
  if (ec || !args.is_object()) return prefix + "the arguments are not a JSON object";
  const json::object& obj = args.get_object();
  UserQuestion q;
  q.call_id = std::move(call_id);
  const json::value* question = obj.if_contains("question");
  if (!question || !question->is_string() || question->get_string().empty())
    return prefix + "`question` must be a non-empty string";
  if (question->get_string().size() > kMaxQuestionBytes)
    return prefix + "`question` is longer than " + std::to_string(kMaxQuestionBytes) + " bytes";
  q.question = support::valid_utf8_text(question->get_string());
  if (const json::value* choices = obj.if_contains("choices"); choices && !choices->is_null()) {
    if (!choices->is_array()) return prefix + "`choices` must be an array of strings";
    const json::array& list = choices->get_array();
    if (list.size() > kMaxChoices) return prefix + "at most " + std::to_string(kMaxChoices) + " choices";
    for (const json::value& c : list) {
      if (!c.is_string() || c.get_string().empty()) return prefix + "every choice must be a non-empty string";
      if (c.get_string().size() > kMaxChoiceBytes)
        return prefix + "a choice is longer than " + std::to_string(kMaxChoiceBytes) + " bytes";
      std::string text = support::valid_utf8_text(c.get_string());
      if (std::find(q.choices.begin(), q.choices.end(), text) != q.choices.end())
        return prefix + "the choice \"" + text + "\" is given twice";
      q.choices.push_back(std::move(text));
    }
  }
  for (const auto& [key, value] : obj)
    if (key != "question" && key != "choices") return prefix + "unknown parameter `" + std::string(key) + "`";
  return q;
}

ToolOutcome user_answer_outcome(const UserAnswer& answer, std::size_t max_bytes) {
  ToolOutcome out;
  switch (answer.kind) {
  case UserAnswer::Kind::answered: {
    std::string text = support::valid_utf8_text(answer.text);
    if (text.size() > max_bytes) text.resize(support::utf8_floor(text, max_bytes));
    out.text = "The user answered: " + text;
    break;
  }
  case UserAnswer::Kind::declined: out.text = "The user declined to answer."; break;
  case UserAnswer::Kind::dismissed: out.text = "The user closed the question without answering."; break;
  case UserAnswer::Kind::cancelled:
    out.text = "Error: the question was withdrawn: the turn was cancelled";
    out.is_error = true;
    out.cancelled = true;
    break;
  case UserAnswer::Kind::failed:
    out.text = "Error: the question could not be asked: " + support::valid_utf8_text(answer.text);
    out.is_error = true;
    break;
  }
  return out;
}

} // namespace acp::engine
