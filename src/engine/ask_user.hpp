// The `ask_user` tool: the model asks the person at the editor a question (with choices, or free
// text) and reads the answer as the call's result. Only offered while the client can show a form
// (ACP elicitation); how the question reaches the editor is the observer's business
// (TurnObserver::ask_user), so nothing here knows ACP.
#pragma once

#include "engine/tool_runner.hpp"
#include "llm/provider.hpp"

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace acp::engine {

inline constexpr std::string_view kAskUserTool = "ask_user";

// Bounds on what the model may ask: a question is read by a person in a dialog, not a document.
inline constexpr std::size_t kMaxQuestionBytes = 4096;
inline constexpr std::size_t kMaxChoices = 20;
inline constexpr std::size_t kMaxChoiceBytes = 200;

struct UserQuestion {
  std::string call_id;
  std::string question;
  std::vector<std::string> choices;  ///< empty: a free-text answer
};

struct UserAnswer {
  enum class Kind {
    answered,   ///< `text` is what the user gave
    declined,   ///< the user chose not to answer
    dismissed,  ///< the dialog was closed without a choice
    cancelled,  ///< the turn was cancelled while it waited
    failed,     ///< the client could not ask; `text` says why
  } kind = Kind::cancelled;
  std::string text;
};

/// The tool's definition as the model sees it.
const llm::ToolDefinition& ask_user_definition();

/// The call's arguments checked against the bounds above; a string is the error the model reads.
std::variant<UserQuestion, std::string> read_user_question(std::string call_id, const std::string& arguments);

/// What the model reads for an answer: valid UTF-8, at most `max_bytes` of the user's text.
ToolOutcome user_answer_outcome(const UserAnswer& answer, std::size_t max_bytes);

} // namespace acp::engine
