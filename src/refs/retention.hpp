// Per-source retention under the byte budget (docs/session-references.md#retention), in linear time.
//
// The original re-serializes the whole data object after every dropped message, which is quadratic.
// The serialized size of the data object is `fixed + Σ item sizes + (items − 1)` because the JSON of
// an array is its elements joined by commas and the `<` escaping is per character. So we measure each
// item once, keep running sums while dropping oldest non-checkpoint items (a forward cursor, since
// drops always take the first eligible item), pick the longest text for head/tail truncation with a
// heap, and write the JSON once at the end. The decisions, the probe sequence of the truncation
// search and the resulting bytes are identical to the original's; only the work differs.
#pragma once

#include "refs/projection.hpp"
#include "refs/work_counter.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::refs {

/// The identifying fields of one data object, in their serialized order.
struct SourceHeader {
  std::string_view session_id;   ///< snapshot.session.id
  std::string_view label;        ///< the normalized input label
  std::optional<std::string_view> cwd;
  std::optional<std::int64_t> captured_through_seq;
  /// An anchored reference (docs/session-references.md#anchors): `"anchorSeq"` follows
  /// capturedThroughSeq (the seq of the item centred on, null without items), retention keeps the
  /// items around items[*anchor_index] instead of the newest, and that item is marked
  /// `"anchored":true`.
  bool anchored = false;
  std::optional<std::size_t> anchor_index = std::nullopt;
};

/// The stats of the source record, in its key order.
struct RetentionStats {
  bool compacted = false;
  std::int64_t original_messages = 0;
  std::int64_t retained_messages = 0;
  std::int64_t omitted_messages = 0;
  std::int64_t omitted_bytes = 0;
  bool truncated = false;
};

struct RetainedSource {
  std::string data_json;  ///< tag-safe JSON of {sessionId,label,cwd,capturedThroughSeq,conversation}
  RetentionStats stats;
  std::optional<std::int64_t> anchor_seq = std::nullopt;  ///< anchored: the seq centred on (none without items)
};

/// Result of truncateWithNotice: the kept head, the kept tail and the omission notice.
struct TruncatedText {
  std::string text;
  std::int64_t omitted_bytes = 0;
};

/// dsh-retention headTail truncation with an exact omission notice, searched as the original does
/// (r = floor((low+high)/2), success → low = r+1, failure → high = r−1), including the TextDecoder
/// quirk that strips one leading U+FEFF from each decoded piece.
TruncatedText truncate_with_notice(std::string_view text, std::int64_t max_out, WorkCounter* counter = nullptr);

/// The serialized size retention measures for one item: {"role":…,"text":…} with a tag-safe text.
std::int64_t item_size(Role role, std::string_view text, WorkCounter* counter = nullptr);

/// Applies the budget to one projected source (with an anchor: centred retention, see SourceHeader); nullopt when even the fixed fields plus one empty
/// shell per surviving item cannot fit (→ SESSION_REFERENCE_BUDGET_EXCEEDED). Released items
/// (ProjectedItem::released) are measured by their recorded sizes; the caller guarantees Phase 1
/// drops them (std::logic_error otherwise).
std::optional<RetainedSource> retain(const SourceHeader& header, const std::vector<ProjectedItem>& items,
                                     std::int64_t max_bytes, WorkCounter* counter = nullptr);

} // namespace acp::refs
