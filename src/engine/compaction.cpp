#include "engine/compaction.hpp"

#include "llm/token_estimate.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace acp::engine {

namespace json = boost::json;

const char* const kSummarySystemPrompt =
    "You write the checkpoint that replaces an earlier span of a conversation between a user and a coding "
    "assistant, so the assistant can continue without it. Summarise the conversation you are given in Markdown "
    "with exactly these sections, in this order, each a short bullet list (write \"- none\" when empty):\n"
    "## Goal\n## Constraints and preferences\n## Progress\n## Key decisions\n## Files and code\n## Next steps\n"
    "Keep names, paths, identifiers, numbers and the user's own wording of requirements exactly. A message that "
    "starts with an earlier checkpoint is background: carry its facts forward. Do not address the user and do not "
    "add anything that was not said.";

std::optional<CompactionPlan> plan_compaction(const Conversation& conversation, const PlanOptions& options,
                                              std::string& why) {
  const auto& surface = conversation.surface();
  // The start of the keep_turns-th most recent user turn.
  std::int64_t seen = 0;
  std::size_t cut = surface.size();
  for (std::size_t i = surface.size(); i-- > 0;) {
    if (!surface[i].direct) continue;
    if (++seen == options.keep_turns) {
      cut = i;
      break;
    }
  }
  if (seen < options.keep_turns || cut == 0) {
    why = "the conversation has fewer than " + std::to_string(options.keep_turns + 1) + " user turns";
    return std::nullopt;
  }
  // A reference snapshot belongs to the turn of the direct message that follows it.
  while (cut > 0 && !surface[cut - 1].direct && !surface[cut - 1].checkpoint &&
         surface[cut - 1].message.role == llm::Role::user &&
         surface[cut - 1].turn != 0 && surface[cut - 1].turn == surface[cut].turn)
    --cut;
  CompactionPlan plan;
  plan.cut = cut;
  std::int64_t new_tokens = 0;
  for (std::size_t i = 0; i < cut; ++i) {
    const auto& e = surface[i];
    plan.shadowed_seqs.push_back(e.seq);
    if ((e.message.text.empty() && e.message.tool_calls.empty()) || conversation.refused(e.turn)) continue;
    std::int64_t tokens = llm::estimate_message_tokens(e.message);
    plan.shadowed_tokens += tokens;
    plan.bytes += llm::message_bytes(e.message);
    if (!e.checkpoint) new_tokens += tokens;
  }
  if (cut == 0 || new_tokens == 0) {
    why = "nothing before the last " + std::to_string(options.keep_turns) + " user turns is left to condense";
    return std::nullopt;
  }
  if (new_tokens < options.min_new_tokens) {
    why = "it would free too little (about " + std::to_string(new_tokens) + " tokens of new material, less than " +
          std::to_string(options.min_new_tokens) + ")";
    return std::nullopt;
  }
  return plan;
}

std::int64_t summary_max_tokens(std::optional<std::int64_t> window) {
  constexpr std::int64_t kMax = 4096;
  return window ? std::min(kMax, std::max<std::int64_t>(*window / 4, 64)) : kMax;
}

llm::Request summary_request(const Conversation& conversation, const CompactionPlan& plan, const std::string& model,
                             const std::string& focus, std::optional<std::int64_t> window) {
  llm::Request request;
  request.model = model;
  request.purpose = llm::Purpose::summary;
  request.max_tokens = summary_max_tokens(window);
  std::vector<llm::Message> shadowed = conversation.messages(0, plan.cut);
  std::string instruction = "Write the checkpoint summary of the conversation above now, following the system instructions.";
  if (!focus.empty()) instruction += "\nFocus: " + focus;
  request.messages.push_back({llm::Role::system, kSummarySystemPrompt});
  if (window) {
    // Leave out the oldest messages until the request fits beside the summary (a leading checkpoint stays).
    std::int64_t limit = *window - *request.max_tokens;
    std::int64_t fixed = llm::estimate_request_tokens({request.messages.front(), {llm::Role::user, instruction}});
    std::int64_t total = fixed + llm::estimate_request_tokens(shadowed) - llm::kRequestOverheadTokens;
    std::size_t keep_first = !conversation.surface().empty() && conversation.surface().front().checkpoint ? 1 : 0;
    std::size_t drop = 0;
    while (total > limit && keep_first + drop + 1 < shadowed.size()) {
      total -= llm::estimate_message_tokens(shadowed[keep_first + drop]);
      ++drop;
    }
    // A tool message must follow its call: the answers of a dropped call go with it.
    while (drop && keep_first + drop < shadowed.size() && shadowed[keep_first + drop].role == llm::Role::tool) ++drop;
    if (drop) shadowed.erase(shadowed.begin() + static_cast<std::ptrdiff_t>(keep_first),
                             shadowed.begin() + static_cast<std::ptrdiff_t>(keep_first + drop));
  }
  for (auto& m : shadowed) request.messages.push_back(std::move(m));
  request.messages.push_back({llm::Role::user, std::move(instruction)});
  return request;
}

json::array summary_blocks(const std::string& text) {
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  std::size_t b = 0, e = text.size();
  while (b < e && space(text[b])) ++b;
  while (e > b && space(text[e - 1])) --e;
  if (b == e) return {};
  return json::array{json::object{{"type", "text"}, {"text", text.substr(b, e - b)}}};
}

std::string first_lines(const std::string& text, std::size_t lines) {
  std::size_t pos = 0;
  for (std::size_t n = 0; n < lines; ++n) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return text;
    ++pos;
  }
  return pos ? text.substr(0, pos - 1) : std::string();
}

} // namespace acp::engine
