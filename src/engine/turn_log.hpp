// Writing one prompt turn to the session log in the shapes the harness agent loop writes
// (harness-compat §1.4, §1.9; contracts §4), split by thread:
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

/// The refusal code written to the log (contracts §4).
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

struct TextBlock {
  llm::DeltaKind kind;
  std::string text;
};

class ChunkBuffer {
public:
  ChunkBuffer(std::int64_t turn, std::int64_t step) : turn_(turn), step_(step) {}
  /// Buffers one delta; returns true when the pending batch should be written now.
  bool add(const llm::Delta& delta);
  /// The pending chunk events (empties the buffer).
  ChunkBatch take();
  /// The closing chunks of a finished step: block-end of the open block, usage, finish.
  void close(const llm::Completion& completion, bool refused);
  const std::vector<TextBlock>& blocks() const noexcept { return blocks_; }
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
  enum class Kind { completed, max_tokens, aborted, refused, error } kind = Kind::completed;
  std::string message;  ///< error: the provider's message
  std::optional<std::string> code;
};

class TurnLog {
public:
  explicit TurnLog(store::SessionWriter writer);

  std::int64_t turn() const noexcept { return turn_; }
  static constexpr std::int64_t step() noexcept { return 1; }
  store::SessionWriter& writer() noexcept { return writer_; }

  /// Writes the first batch: `prefix` (an injected snapshot), turn/start, the direct message, the
  /// title when the log has none yet, and (when `with_step`) step/start and `request_header`.
  /// Returns the records written.
  std::vector<boost::json::object> begin(std::vector<store::NewEvent> prefix, const std::string& user_text,
                                         std::optional<store::NewEvent> request_header, bool with_step = true);
  /// step/start and `request_header`, when begin() left them out (a compaction came first).
  std::vector<boost::json::object> open_step(std::optional<store::NewEvent> request_header);

  // ---- compaction (harness-compat §1.5) ----
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

  store::SessionWriter writer_;
  std::int64_t turn_ = 0;
  /// The seqs of the chunks written, as [first, last] runs (one per turn as a rule): assistant/message
  /// lists them all, but a list of 200,000 JSON numbers is not kept for the whole turn.
  std::vector<std::pair<std::int64_t, std::int64_t>> chunk_runs_;
  std::int64_t chunk_events_ = 0;
  std::int64_t compact_start_seq_ = -1;
};

} // namespace acp::engine
