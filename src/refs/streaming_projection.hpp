// readSurface + projection of a stored log in one streaming pass (docs/store-format.md#reading-a-surface,
// docs/session-references.md#projection),
// with memory bounded by the reference budget plus the largest event instead of the log size.
//
// Raw events go through store::SurfaceFold (the same rules as fold_surface, so an invalid surface
// fails the same way) and project_event(); only projected items of the current surface are kept,
// and a replace (compaction) drops the items it shadows. Texts are released early for items that
// retention certainly drops: an eligible item (not a checkpoint) with more than max_reference_bytes
// of items after it on the surface never fits, whatever comes later, because appends only add to
// what follows it. Its size and byte count stay, so the omitted counts remain exact. A later replace
// can shadow what followed such an item and bring it back into reach; then its text is fetched by
// a second pass over the log (rare: only a compaction after the budget was exceeded can cause it).
// Per live surface node a few words of bookkeeping remain (what the fold's validation needs).
//
// An anchored read (a reference's `#seq=N`, docs/session-references.md#anchors) follows the anchor
// through the fold instead: the anchor lands on the first surface event at or after seq N and moves
// with every replace that shadows it, so a seq inside a compacted range ends on the checkpoint that
// covers it. Which texts retention may keep is known only at the end of the log (a later replace
// can move the anchor), so the first pass holds none and the second pass fetches the items within
// the budget on either side of the anchored item: memory stays bounded, at the price of reading the
// log twice.
#pragma once

#include "refs/projection.hpp"

#include "store/errors.hpp"
#include "store/fold.hpp"
#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace acp::refs {

/// What a pass over a log reports besides its events.
struct StreamedLog {
  store::SessionHeader header;
  std::optional<std::int64_t> captured_through_seq;  ///< last raw event's seq, nullopt for an empty log
};

using EventSink = std::function<void(boost::json::object&&)>;
/// One pass over a log: every committed raw event to the sink, in log order. It may be called twice
/// (see above); it should check its stop token per event and throw when stopped.
using EventStream = std::function<StreamedLog(const EventSink&)>;

/// The streaming fold and projection, fed one raw event at a time.
class StreamingProjector {
public:
  explicit StreamingProjector(std::int64_t max_reference_bytes, std::optional<std::int64_t> anchor_seq = std::nullopt)
      : max_(max_reference_bytes), anchor_seq_(anchor_seq) {}

  /// First pass. A fold error is kept and thrown by finish(), so that a corrupt line later in the
  /// log is still reported first, as when the whole log is read before folding.
  void add(const boost::json::object& event);
  /// Seqs whose texts were released but may be retained after all (only after a replace, or any
  /// item near the anchor of an anchored read).
  std::vector<std::int64_t> missing() const;
  /// Anchored read, after the first pass: the index of the item the snapshot centres on (the first
  /// item at or after the anchor's surface node, else the last item); nullopt without items or
  /// without an anchor.
  std::optional<std::size_t> anchor_index() const;
  /// Second pass: takes the text of `event` when its seq is missing.
  void refill(const boost::json::object& event);
  /// The items in surface order. Throws the kept fold error, or StoreError when a missing text was
  /// not refilled.
  ProjectedConversation finish();

  std::size_t held_texts() const { return texts_.size(); }

private:
  struct Item {
    std::int64_t seq;
    std::int64_t size;   ///< serialized size as retention measures it
    std::int64_t bytes;  ///< UTF-8 bytes of the text
    Role role;
    bool checkpoint;
  };
  void hold(const Item& item, const ProjectedItem& projected);
  /// Items [lo, hi] whose texts retention may keep; `any` false when none.
  struct Reach {
    bool any = false;
    std::size_t lo = 0, hi = 0;
  };
  Reach reach() const;
  bool needed(std::size_t j, const Reach& r) const;
  void replace_items(const store::FoldStep& step, const std::optional<Item>& item);
  void follow_anchor(const store::FoldStep& step, std::int64_t seq);
  void advance_window();
  void recompute_window();

  std::int64_t max_;
  std::optional<std::int64_t> anchor_seq_;
  std::optional<std::size_t> anchor_node_;  ///< the anchor's position among the fold's nodes, once reached
  store::SurfaceFold fold_;
  std::vector<bool> node_has_item_;  ///< parallel to the fold's nodes
  std::vector<Item> items_;          ///< projected items of the current surface, in surface order
  struct Held {
    std::string text;
    bool checkpoint;
  };
  std::unordered_map<std::int64_t, Held> texts_;  ///< held texts by seq
  std::unordered_map<std::int64_t, std::size_t> wanted_;  ///< second pass: missing seq -> item index
  std::size_t window_ = 0;           ///< eligible items before it have released texts
  std::int64_t window_size_ = 0;     ///< Σ size over items_[window_..]
  std::optional<store::FoldError> error_;
  std::string joined_;
};

/// readSurface + project of one log through `stream`: at most two passes, the second only when a
/// released text is needed after all (always, for an anchored read with items). With `anchor_seq`
/// the result's `anchor` names the item to centre on.
ProjectedSource project_log(const EventStream& stream, std::int64_t max_reference_bytes,
                            std::optional<std::int64_t> anchor_seq = std::nullopt);

} // namespace acp::refs
