// Builders for the events of a prompt turn, in the shapes the harness agent loop writes
// (docs/store-format.md#event-types, docs/store-format.md#how-a-prompt-turn-is-written). They only build
// NewEvent values: the host decides the sequence and batching, the writer assigns seq and time.
#pragma once

#include "store/new_event.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::store::events {

/// turn/start {turn, trigger:{kind:"message", source:{kind:"user"}}}
NewEvent turn_start(std::int64_t turn);
/// user/message {content:[{type:"text",text}], source:{kind:"user"}}, surfaceOp "append".
NewEvent user_message(std::string_view text);
/// user/message with explicit content and source (injected context, checkpoints).
NewEvent user_message(boost::json::array content, boost::json::object source,
                      std::optional<boost::json::array> source_event_seqs = std::nullopt);
/// session/title {title, messageSeqs:[user_seq], source:{kind:"fallback"}}
NewEvent session_title(std::string_view title, std::int64_t user_seq);
/// The fallback title exactly as the original writes it (store/title.hpp); "" = write no title.
std::string fallback_title(std::string_view text);
NewEvent step_start(std::int64_t turn, std::int64_t step);
NewEvent step_end(std::int64_t turn, std::int64_t step);
/// assistant/chunk {turn, step, chunk:{type:"text-delta"|"reasoning-delta", index, text}}
NewEvent text_delta(std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text);
NewEvent reasoning_delta(std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text);
/// assistant/message {turn, step, content, provenance:{provider, model}, usage?}, surfaceOp "append",
/// sourceEventSeqs = the chunk seqs it was assembled from (when given).
NewEvent assistant_message(std::int64_t turn, std::int64_t step, boost::json::array content, std::string_view provider,
                           std::string_view model, std::optional<boost::json::object> usage = std::nullopt,
                           std::optional<boost::json::array> source_event_seqs = std::nullopt);
/// tool/call {turn, step, callId, name, arguments}: `arguments` the model's raw JSON text.
NewEvent tool_call(std::int64_t turn, std::int64_t step, std::string_view call_id, std::string_view name,
                   std::string_view arguments);
/// tool/result {turn, step, callId, content, isError[, error][, meta]}, surfaceOp "append",
/// sourceEventSeqs [call_seq]. `error`: {name, code} of a result the tool did not produce itself.
NewEvent tool_result(std::int64_t turn, std::int64_t step, std::string_view call_id, boost::json::array content,
                     bool is_error, std::int64_t call_seq, std::optional<boost::json::object> error = std::nullopt,
                     std::optional<boost::json::object> meta = std::nullopt);
/// todo/write {todos}
NewEvent todo_write(boost::json::array todos);
/// approval/asked {id, toolName, callId[, reason]} and approval/decided {id, outcome}: the harness's
/// audit pair (outcome one of allowed-once, rejected, cancelled, unavailable).
NewEvent approval_asked(std::string_view id, std::string_view tool, std::string_view call_id,
                        std::optional<std::string_view> reason = std::nullopt);
NewEvent approval_decided(std::string_view id, std::string_view outcome);
/// turn/end {turn, reason}
NewEvent turn_end(std::int64_t turn, boost::json::object reason);

/// turn/start of a turn opened for `/compact`: trigger {kind:"message", source:{kind:"plugin",plugin:"compact"}}.
NewEvent compact_turn_start(std::int64_t turn);

// Compaction (docs/store-format.md#compaction), in this order inside an open turn: compact/start, then
// compact/summary + checkpoint + compact/end, or compact/end with an error.
/// The checkpoint's preamble, exactly as compact-basic writes it.
extern const char* const kCompactPreamble;
/// compact/start {turn}
NewEvent compact_start(std::int64_t turn);
/// compact/summary {summary, shadowedRange:{start,end}, shadowedSeqs, shadowedTokenCount, provider, model, maxTokens?}
NewEvent compact_summary(boost::json::array summary, std::int64_t start, std::int64_t end, boost::json::array shadowed_seqs,
                         std::int64_t shadowed_tokens, std::string_view provider, std::string_view model,
                         std::optional<std::int64_t> max_tokens);
/// The checkpoint user/message: content [preamble + "\n\n<compacted-summary>", …summary blocks,
/// "</compacted-summary>"], source {kind:"plugin",plugin:"compact"}, sourceEventSeqs
/// [start_seq, summary_seq, …shadowed], surfaceOp {op:"replace", start, end}.
NewEvent compact_checkpoint(const boost::json::array& summary, std::int64_t start_seq, std::int64_t summary_seq,
                            const boost::json::array& shadowed_seqs);
/// compact/end {turn[, error]}
NewEvent compact_end(std::int64_t turn, std::optional<std::string_view> error = std::nullopt);

/// Turn-end reasons: {kind:"completed"}, {kind:"aborted"}, {kind:"max-tokens"},
/// {kind:"error", step, message[, code]}.
boost::json::object reason(std::string_view kind);
boost::json::object error_reason(std::int64_t step, std::string_view message,
                                 std::optional<std::string_view> code = std::nullopt);

} // namespace acp::store::events
