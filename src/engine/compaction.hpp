// Choosing what a compaction condenses and asking the model for the summary (pure: no I/O).
//
// A compaction shadows a prefix of the current surface: everything before the most recent
// `keep_turns` user turns (a turn starts at its direct user message, or at the reference snapshot
// injected just before it). The span may include an earlier checkpoint, whose text the new summary
// then carries forward. A span with too little new material (its messages other than an earlier
// checkpoint, refused turns left out) is not worth a model request and is skipped.
//
// The summariser request is the session's model with kSummarySystemPrompt, the shadowed messages
// as they would be sent, and a final user instruction (with `Focus: …` when /compact names one).
#pragma once

#include "engine/conversation.hpp"
#include "llm/provider.hpp"

#include <boost/json/array.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace acp::engine {

extern const char* const kSummarySystemPrompt;

struct CompactionPlan {
  std::size_t cut = 0;                 ///< surface entries [0, cut) are shadowed
  boost::json::array shadowed_seqs;    ///< their seqs, in surface order
  std::int64_t shadowed_tokens = 0;    ///< estimated tokens of their messages
  std::size_t bytes = 0;               ///< UTF-8 bytes of their messages (llm::message_bytes)
  std::size_t messages() const noexcept { return shadowed_seqs.size(); }
  std::int64_t start_seq() const { return shadowed_seqs.front().as_int64(); }
  std::int64_t end_seq() const { return shadowed_seqs.back().as_int64(); }
};

struct PlanOptions {
  std::int64_t keep_turns = 2;
  /// Smallest estimate of new material (tokens) worth a summary.
  std::int64_t min_new_tokens = 1;
};

/// The span to compact, or nullopt with the reason in `why`.
std::optional<CompactionPlan> plan_compaction(const Conversation& conversation, const PlanOptions& options,
                                              std::string& why);

/// Tokens the summary may take: a quarter of the window, at most 4096 (4096 without a window).
std::int64_t summary_max_tokens(std::optional<std::int64_t> window);

/// The summariser's request. With a window, the oldest shadowed messages (an earlier checkpoint
/// excepted) are left out of it until it fits beside the summary's max tokens.
llm::Request summary_request(const Conversation& conversation, const CompactionPlan& plan, const std::string& model,
                             const std::string& focus, std::optional<std::int64_t> window);

/// The summary as content blocks: one text block (whitespace at the ends trimmed); empty when the
/// model said nothing.
boost::json::array summary_blocks(const std::string& text);

/// The first `lines` lines of `text` (the card shows the start of the summary).
std::string first_lines(const std::string& text, std::size_t lines);

} // namespace acp::engine
