// The log lines of a batch of assistant/chunk events, built without event trees.
//
// A streamed answer is written as one assistant/chunk event per delta, and a prompt round trip's
// profile showed building each delta as a json::object record (~15 heap allocations: its keys, its
// two tables, its strings) and serialising it again costing a fifth of the server's CPU. A delta's
// line is a fixed layout around four numbers and one string, so it is written here directly. The
// bytes are those of json::serialize(event_record("assistant/chunk", seq, time, data)) for the
// same event (Boost.JSON's escaping: `"` and `\`, \b \t \n \f \r, other C0 controls as lowercase
// \u00xx, everything else raw); a unit test holds the two together. The other chunk events
// (block-start, block-end, usage, finish) are rare and go through the record and the serializer.
//
// Such a batch changes nothing in the log's state but its count and last time, which is what lets
// SessionWriter::append_chunk_lines skip the records (LogState::observe_plain).
#pragma once

#include "store/new_event.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace acp::store {

/// Appends the JSON string literal of `text` (quotes included) as Boost.JSON's serializer writes it.
void append_json_string_literal(std::string& out, std::string_view text);

/// Appends the line (without '\n') of assistant/chunk {turn, step, chunk:{type: kind, index, text}}
/// at `seq` and `time`: kind is "text-delta" or "reasoning-delta".
void append_delta_line(std::string& out, std::int64_t seq, std::int64_t time, std::int64_t turn, std::int64_t step,
                       std::string_view kind, std::int64_t index, std::string_view text);

/// A batch of assistant/chunk lines numbered from `first_seq` (SessionWriter::next_seq()). Each
/// line gets its time when added (now, as SessionWriter::append stamps an event without one).
class ChunkLines {
public:
  explicit ChunkLines(std::int64_t first_seq) : next_seq_(first_seq), first_seq_(first_seq) {}

  void add_delta(std::int64_t turn, std::int64_t step, std::string_view kind, std::int64_t index,
                 std::string_view text);
  /// Any other assistant/chunk event (no surface keys, not ignorable); throws InvalidBatch otherwise.
  void add_event(NewEvent event);

  std::int64_t first_seq() const noexcept { return first_seq_; }
  std::int64_t count() const noexcept { return next_seq_ - first_seq_; }
  /// The time of the last line (0 while empty).
  std::int64_t last_time() const noexcept { return last_time_; }
  const std::string& text() const noexcept { return text_; }
  bool empty() const noexcept { return next_seq_ == first_seq_; }

private:
  std::string text_;
  std::int64_t next_seq_, first_seq_;
  std::int64_t last_time_ = 0;
};

} // namespace acp::store
