// Writes one prompt turn to the session log in the shapes the harness agent loop writes
// (harness-compat §1.4, §1.9; contracts §4): turn/start + direct user/message (+ fallback title in
// turn 1) + step/start (+ request/header when the session's model changed) as the first batch; assistant/chunk events (block-start, deltas, block-end,
// usage, finish) appended in batches at least every 100 ms while streaming; then assistant/message,
// step/end and turn/end, fsynced before the prompt is answered. Owns the session's write lock
// (SessionWriter) for the whole turn.
#pragma once

#include "llm/provider.hpp"
#include "store/session_writer.hpp"

#include <boost/json/array.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace acp::handlers {

class TurnRecorder {
public:
  explicit TurnRecorder(store::SessionWriter writer);

  std::int64_t turn() const noexcept { return turn_; }
  store::SessionWriter& writer() noexcept { return writer_; }

  /// `prefix` events (an injected snapshot) go first in the same batch. Returns the title written
  /// (turn 1 only), if any.
  std::optional<std::string> begin(std::vector<store::NewEvent> prefix, const std::string& user_text);

  /// A request/header event (model choice) that begin() writes right after step/start, where the
  /// harness writes it (fixture model-switching). Call before begin().
  void request_header(store::NewEvent header) { request_header_ = std::move(header); }

  /// Records one streamed delta (buffered; flushed when the batch is 100 ms old).
  void delta(const llm::Delta& delta);

  /// Closes the step and the turn. `failure` set: the turn ends `error` with that message.
  /// Appends and fsyncs (blocking: call off the connection thread).
  void finish(const llm::Completion& completion, const std::optional<std::string>& failure,
              const std::optional<std::string>& failure_code);

  /// The text the assistant produced (for the in-memory conversation cache).
  const std::string& answer_text() const noexcept { return text_; }

private:
  struct Block {
    llm::DeltaKind kind;
    std::string text;
  };
  void flush();

  store::SessionWriter writer_;
  std::int64_t turn_ = 0;
  std::int64_t step_ = 1;
  std::vector<store::NewEvent> pending_;
  std::chrono::steady_clock::time_point pending_since_;
  boost::json::array chunk_seqs_;
  std::vector<Block> blocks_;
  std::string text_;
  std::optional<store::NewEvent> request_header_;
};

} // namespace acp::handlers
