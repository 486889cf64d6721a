// Decoding of chat-completion chunks: one SSE data event in, deltas and end-of-turn facts out.
//
// Each data event is a JSON `chat.completion.chunk`. `choices[0].delta.content` becomes a text delta;
// `delta.reasoning_content` (DeepSeek) or `delta.reasoning` (vLLM) a reasoning delta. `finish_reason`
// maps stop → end_turn, length → max_tokens, content_filter → refusal (anything else, e.g. tool_calls,
// ends the answer normally). `delta.tool_calls` fragments become tool_call deltas and are assembled
// by their `index` into whole calls (at most kMaxToolCalls in one answer). Usage arrives in a last chunk with empty `choices` when
// `stream_options.include_usage` was sent; cache hits are read from DeepSeek's `prompt_cache_hit_tokens`
// or OpenAI's `prompt_tokens_details.cached_tokens`. Malformed JSON, or an `error` object inside the
// stream, is a ProviderError (PROVIDER_UNAVAILABLE: a protocol failure, not the caller's bad request).
// Pure: no I/O.
#pragma once

#include "llm/provider.hpp"

#include <boost/json/array.hpp>

#include <optional>
#include <string_view>
#include <vector>

namespace acp::llm {

class ChatStreamDecoder {
public:
  /// Decodes one data event, appending its non-empty deltas to `out`. Throws ProviderError.
  void on_data(std::string_view data, std::vector<Delta>& out);

  /// The mapped finish_reason, once a chunk carried one.
  std::optional<StopKind> stop() const noexcept { return stop_; }
  /// The usage block, once a chunk carried one.
  const std::optional<Usage>& usage() const noexcept { return usage_; }
  /// The `model` the server reported (may differ from the one requested), empty until seen.
  const std::string& served_model() const noexcept { return served_model_; }
  /// The calls assembled so far, in index order.
  const std::vector<ToolCall>& tool_calls() const noexcept { return calls_; }

  static constexpr std::size_t kMaxToolCalls = 128;

private:
  void on_tool_calls(const boost::json::array& calls, std::string_view data, std::vector<Delta>& out);

  std::vector<ToolCall> calls_;
  std::optional<StopKind> stop_;
  std::optional<Usage> usage_;
  std::string served_model_;
};

/// Maps an OpenAI finish_reason to a StopKind; nullopt for reasons that mean "the provider failed"
/// (DeepSeek's insufficient_system_resource).
std::optional<StopKind> map_finish_reason(std::string_view reason);

} // namespace acp::llm
