// How many tokens a request takes, without a tokenizer (we have none for any provider).
//
// Estimate: ceil(UTF-8 bytes / 3) per message (its text, its tool calls' ids, names and arguments, the
// id of the call a tool message answers) plus 4 tokens of per-message overhead (role and separators)
// and 4 per tool call (its `type`/`function` wrapping), plus 3 for the request. BPE tokenizers average
// about 4 bytes per token on English and code and about 3 bytes (one CJK character) or less per token
// elsewhere, so dividing by 3 over-counts English by about a third and stays near the truth for CJK:
// the estimate errs towards compacting early rather than sending a request the provider refuses.
//
// The answer needs room too: kAnswerReserve(window) tokens (an eighth of the window, at most 8192)
// are kept free, and a request triggers compaction when its estimate exceeds
// compact_at × (window − reserve).
#pragma once

#include "llm/provider.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace acp::llm {

inline constexpr std::int64_t kBytesPerToken = 3;
inline constexpr std::int64_t kMessageOverheadTokens = 4;
inline constexpr std::int64_t kToolCallOverheadTokens = 4;
inline constexpr std::int64_t kRequestOverheadTokens = 3;
inline constexpr std::int64_t kMaxAnswerReserve = 8192;

/// ceil(bytes / kBytesPerToken).
std::int64_t estimate_text_tokens(std::string_view text);
/// UTF-8 bytes a message carries: text, tool calls (id, name, arguments), tool_call_id.
std::size_t message_bytes(const Message& message);
/// One message: its bytes plus kMessageOverheadTokens and kToolCallOverheadTokens per call.
std::int64_t estimate_message_tokens(const Message& message);
/// A whole request: every message plus kRequestOverheadTokens.
std::int64_t estimate_request_tokens(const std::vector<Message>& messages);
/// The tool definitions a request offers: each one's name, description and schema bytes, plus
/// kToolCallOverheadTokens for its wrapping.
std::int64_t estimate_tools_tokens(const std::vector<ToolDefinition>& tools);
/// Tokens kept free for the answer: min(window / 8, kMaxAnswerReserve).
std::int64_t answer_reserve(std::int64_t window);
/// The estimate above which a request is compacted first; nullopt = never (no window, or
/// compact_at <= 0).
std::optional<std::int64_t> compaction_threshold(std::optional<std::int64_t> window, double compact_at);

/// True for a provider's 400 message saying the request does not fit the context window
/// ("maximum context length", "context_length_exceeded", "prompt is too long", …).
bool names_context_too_long(std::string_view message);

} // namespace acp::llm
