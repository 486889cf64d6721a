// Packed chunk rows (docs/store-format.md#packed-chunk-rows): one storage line standing for a run of assistant/chunk
// delta events. The store reads them always and never writes them (packChunks defaults to false),
// so only the decoders live here.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace acp::store {

namespace chunk_rows_detail {
enum class RowKind { none, text, reasoning, tool };
// A row that passed validation: views into it.
struct RowFields {
  RowKind kind = RowKind::none;
  std::int64_t seq0 = 0;
  const boost::json::value* turn = nullptr;
  const boost::json::value* step = nullptr;
  const boost::json::value* index = nullptr;
  const boost::json::value* id = nullptr;
  const boost::json::value* name = nullptr;
  boost::json::array* payload = nullptr;
};
} // namespace chunk_rows_detail

enum class LineDecode {
  event,      ///< the line is one event (appended to `out` unvalidated)
  row,        ///< a valid packed row, expanded into its member events
  malformed,  ///< not an object, or a packed row that fails validation: an unparsable line
};

/// Decodes one parsed storage line into events appended to `out` (moved from `line`). Every event
/// owns its memory: for consumers that keep events.
LineDecode decode_storage_line(boost::json::value&& line, std::vector<boost::json::object>& out);

/// One storage line's events for a consumer that is done with each event before asking for the
/// next (a transient scan): a packed row's members are presented one at a time in one event object
/// that is rewritten in place (its seq, time and text), not built as a tree each. Expanding them was
/// a quarter of a packed log's replay. The events are the ones decode_storage_line makes.
class StorageLineEvents {
public:
  /// Takes the parsed line. A malformed row is rejected before any of its strings is moved.
  LineDecode decode(boost::json::value&& line);
  std::size_t size() const { return row_ ? row_members_ : events_.size(); }
  bool is_row() const { return row_; }
  /// Event k (0 <= k < size()), k never decreasing. For a row, the previous event given out becomes
  /// this one: a consumer may move the event away (it is rebuilt), change nothing else.
  boost::json::object& event(std::size_t k);
  /// Lets go of the line (and of the arena its events live in).
  void clear();

private:
  std::vector<boost::json::object> events_;  ///< a plain line's event
  bool row_ = false;
  std::size_t row_members_ = 0;
  // Optionals: emplacing keeps the line's arena (assigning an object would copy it to the heap).
  std::optional<boost::json::object> row_line_;  ///< the row as parsed: the payload strings live in it
  chunk_rows_detail::RowFields fields_;
  std::vector<std::int64_t> times_;
  std::int64_t seq0_ = 0;
  std::optional<boost::json::object> member_;    ///< the reused member event
  std::size_t member_index_ = 0;                 ///< the member it holds now
  std::size_t chunk_size_ = 0;                   ///< members of its chunk object as built
};

} // namespace acp::store
