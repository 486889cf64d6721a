// Writing one prompt turn to the session log in the shapes the harness agent loop writes
// (docs/store-format.md#how-a-prompt-turn-is-written, docs/decisions.md#session-store), split by thread:
//
// - ChunkBuffer lives on the connection thread: it turns streamed deltas into assistant/chunk
//   events (block-start, deltas, block-end) and says when a batch is due (100 ms old, or
//   kChunkBatchEvents events, or kChunkBatchBytes of text: a fast model must not build a batch of
//   its whole answer). A turn holds its pending batch, the batches being written, and the text of
//   its blocks (for assistant/message) — never the records of chunks already written.
// - TurnLog owns the session's write lock (SessionWriter) and does every append and fsync; all its
//   calls run on the session's strand, in order, so seqs are contiguous without further locking.
//
// Log shapes: turn/start + direct user/message (+ fallback title in turn 1) + step/start
// (+ request/header when the model changed) as the first batch, preceded in the same batch by an
// injected reference snapshot; chunk batches while streaming; then assistant/message, step/end and
// turn/end, fsynced before the prompt is answered. A length stop finishes `{"kind":"max-tokens"}`;
// a refusal is an error finish `{kind: error, failure: {message, code: CONTENT_FILTER}}`, no
// assistant/message, and turn/end `{kind: error, step, failure}` with the same failure.
#pragma once

#include "llm/provider.hpp"
#include "store/session_writer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace acp::engine {

/// The refusal code written to the log (docs/decisions.md#session-store).
inline constexpr const char* kContentFilterCode = "CONTENT_FILTER";

/// A chunk batch is due at this many events or this many bytes of delta text, whichever comes first.
inline constexpr std::size_t kChunkBatchEvents = 256;
inline constexpr std::size_t kChunkBatchBytes = 64u << 10;

/// One assistant/chunk event waiting for its batch. Deltas (nearly every chunk of a turn) wait in
/// this compact form, about 60 bytes and their text, and become log events on the strand when
/// written; the other chunks (block-start, block-end, usage, finish) wait as their event.
struct PendingChunk {
  std::int64_t index = 0;
  llm::DeltaKind kind = llm::DeltaKind::text;
  std::string text;
  std::unique_ptr<store::NewEvent> event;  ///< set: not a delta
};
using ChunkBatch = std::vector<PendingChunk>;

/// One block of a step's answer: text, reasoning, or a tool call (`text` = its arguments so far).
struct TextBlock {
  llm::DeltaKind kind;
  std::string text;
  std::size_t call_index = 0;  ///< tool_call: the call's index in the answer
  std::string call_id = {};
  std::string call_name = {};
};

class ChunkBuffer {
public:
  ChunkBuffer(std::int64_t turn, std::int64_t step) : turn_(turn), step_(step) {}
  /// Buffers one delta; returns true when the pending batch should be written now.
  bool add(const llm::Delta& delta);
  /// The pending chunk events (empties the buffer).
  ChunkBatch take();
  /// The closing chunks of a finished step: block-end of the open block, usage, finish
  /// (`tool-calls` when the answer has calls).
  void close(const llm::Completion& completion, bool refused);
  /// The answer's tool calls, in order, from their blocks (arguments whole).
  std::vector<llm::ToolCall> tool_calls() const;
  const std::vector<TextBlock>& blocks() const noexcept { return blocks_; }
  /// The index of the block the last delta went to (its chunks' `index`); -1 before the first.
  std::int64_t current_block() const noexcept { return static_cast<std::int64_t>(blocks_.size()) - 1; }
  bool empty() const noexcept { return blocks_.empty(); }
  /// The pending batch: events and bytes of delta text (the bound the tests hold it to).
  std::size_t pending_events() const noexcept { return pending_.size(); }
  std::size_t pending_bytes() const noexcept { return pending_bytes_; }

private:
  void push_event(store::NewEvent event);

  std::int64_t turn_, step_;
  ChunkBatch pending_;
  std::size_t pending_bytes_ = 0;
  std::chrono::steady_clock::time_point pending_since_;
  std::vector<TextBlock> blocks_;
};

/// How a turn ended, as the log records it.
struct TurnEnding {
  /// step_limit: the turn reached --max-steps with calls still to answer (turn/end `blocked`: the
  /// next step was refused before it started).
  enum class Kind { completed, max_tokens, aborted, refused, error, step_limit } kind = Kind::completed;
  std::string message;  ///< error: the provider's message
  std::optional<std::string> code;
};

class TurnLog {
public:
  explicit TurnLog(store::SessionWriter writer);

  std::int64_t turn() const noexcept { return turn_; }
  /// The current step (1 until open_step() opens a second one).
  std::int64_t step() const noexcept { return step_; }
  /// Whether a step/start was written that no step/end closed yet.
  bool step_open() const noexcept { return step_open_; }
  store::SessionWriter& writer() noexcept { return writer_; }

  /// Writes the first batch: `prefix` (an injected snapshot), turn/start, the direct message, the
  /// title when the log has none yet, and (when `with_step`) step/start and `request_header`.
  /// The message's content is `content` when given (a prompt with images), else `user_text` as one
  /// text block; the title comes from `user_text`. Returns the records written.
  std::vector<boost::json::object> begin(std::vector<store::NewEvent> prefix, const std::string& user_text,
                                         std::optional<store::NewEvent> request_header, bool with_step = true,
                                         std::optional<boost::json::array> content = std::nullopt);
  /// step/end of the open step, step/start (the next step once one was opened) and `request_header`.
  std::vector<boost::json::object> open_step(std::optional<store::NewEvent> request_header);
  /// Ends a step whose answer called tools: `last_chunks` (as chunks()) and the assistant/message
  /// with its tool-call blocks (unsynced: the tools' records follow).
  std::vector<boost::json::object> answer(ChunkBatch last_chunks, const std::vector<TextBlock>& blocks,
                                          const llm::Completion& completion);
  /// Appends records of the open step (tool/call, tool/result, approvals, todo/write), unsynced.
  std::vector<boost::json::object> records(std::vector<store::NewEvent> batch);
  /// Closes the turn without an answer to write: step/end of an open step, then turn/end, fsynced.
  std::vector<boost::json::object> end(const TurnEnding& ending);
  /// assistant/chunk events written and not yet reported by this call (the Conversation skips them).
  std::int64_t take_unobserved_chunks() noexcept { return std::exchange(unobserved_chunks_, 0); }

  // ---- compaction (docs/store-format.md#compaction) ----
  /// turn/start of a `/compact` turn.
  std::vector<boost::json::object> begin_compact_turn();
  /// compact/start (unsynced: a crash before the summary leaves the surface as it was).
  std::vector<boost::json::object> compact_start();
  /// compact/summary, the checkpoint and compact/end as one batch, fsynced.
  std::vector<boost::json::object> compact_done(boost::json::array summary, const boost::json::array& shadowed_seqs,
                                                std::int64_t shadowed_tokens, const std::string& provider,
                                                const std::string& model, std::optional<std::int64_t> max_tokens);
  /// compact/end {turn, error}, fsynced.
  std::vector<boost::json::object> compact_failed(const std::string& error);
  /// turn/end of a `/compact` turn, fsynced.
  std::vector<boost::json::object> end_turn(boost::json::object reason);
  /// Appends a chunk batch (unsynced); its records are not kept (chunks are not on the surface).
  void chunks(ChunkBatch batch);
  /// assistant/chunk events written so far in this turn.
  std::int64_t chunk_events() const noexcept { return chunk_events_; }
  /// Appends `last_chunks` (as chunks()), then closes the step and the turn, fsynced. Returns the
  /// closing records (assistant/message, step/end, turn/end), after chunk_events() chunks.
  std::vector<boost::json::object> finish(ChunkBatch last_chunks, const std::vector<TextBlock>& blocks,
                                          const llm::Completion& completion, const TurnEnding& ending);
  /// Releases the write lock (the writer syncs what is pending first).
  void release() { writer_.release(); }

private:
  std::vector<boost::json::object> append(std::vector<store::NewEvent> batch, bool sync);
  store::NewEvent message(const std::vector<TextBlock>& blocks, const llm::Completion& completion);
  boost::json::object turn_reason(const TurnEnding& ending) const;

  store::SessionWriter writer_;
  std::int64_t turn_ = 0;
  std::int64_t step_ = 1;
  bool step_open_ = false;
  bool step_used_ = false;  ///< a step/start was written in this turn
  std::int64_t unobserved_chunks_ = 0;
  /// The seqs of the step's chunks written, as [first, last] runs (one per step as a rule):
  /// assistant/message lists them all, but a list of 200,000 JSON numbers is not kept for the step.
  std::vector<std::pair<std::int64_t, std::int64_t>> chunk_runs_;
  std::int64_t chunk_events_ = 0;
  std::int64_t compact_start_seq_ = -1;
};

} // namespace acp::engine
