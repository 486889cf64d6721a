#include "llm/token_estimate.hpp"

#include "support/ascii.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace acp::llm {

std::int64_t estimate_text_tokens(std::string_view text) {
  return (static_cast<std::int64_t>(text.size()) + kBytesPerToken - 1) / kBytesPerToken;
}

std::size_t message_bytes(const Message& message) {
  std::size_t bytes = message.text.size() + message.tool_call_id.size();
  for (const auto& call : message.tool_calls) bytes += call.id.size() + call.name.size() + call.arguments.size();
  return bytes;
}

std::int64_t estimate_message_tokens(const Message& message) {
  const auto bytes = static_cast<std::int64_t>(message_bytes(message));
  return (bytes + kBytesPerToken - 1) / kBytesPerToken + kMessageOverheadTokens +
         kToolCallOverheadTokens * static_cast<std::int64_t>(message.tool_calls.size());
}

std::int64_t estimate_request_tokens(const std::vector<Message>& messages) {
  std::int64_t total = kRequestOverheadTokens;
  for (const auto& m : messages) total += estimate_message_tokens(m);
  return total;
}

std::int64_t estimate_tools_tokens(const std::vector<ToolDefinition>& tools) {
  std::int64_t total = 0;
  for (const auto& t : tools) {
    const auto bytes = static_cast<std::int64_t>(t.name.size() + t.description.size() + t.parameters.size());
    total += (bytes + kBytesPerToken - 1) / kBytesPerToken + kToolCallOverheadTokens;
  }
  return total;
}

std::int64_t answer_reserve(std::int64_t window) { return std::min(window / 8, kMaxAnswerReserve); }

std::optional<std::int64_t> compaction_threshold(std::optional<std::int64_t> window, double compact_at) {
  if (!window || *window <= 0 || !(compact_at > 0)) return std::nullopt;
  double usable = static_cast<double>(*window - answer_reserve(*window));
  return static_cast<std::int64_t>(compact_at * usable);
}

bool names_context_too_long(std::string_view message) {
  const std::string lower = support::ascii_lower(message);
  static constexpr std::array<std::string_view, 8> kPhrases = {
      "maximum context length", "context_length_exceeded", "context length", "context window",
      "prompt is too long",     "too many tokens",         "input is too long", "exceeds the context"};
  for (auto phrase : kPhrases)
    if (lower.find(phrase) != std::string::npos) return true;
  return false;
}

} // namespace acp::llm
