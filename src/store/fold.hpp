// foldSurface (docs/store-format.md#folding): the current conversation surface of a log, i.e. which
// surface events are live after every append and replace (compaction). A single pass; any rule
// violation throws FoldError with the message the harness would give.
//
// SurfaceFold is the pass itself, one event at a time, so a reader can fold a log while streaming
// it and never hold the events: it keeps one small node per live surface event (its seq, and for a
// tool/result a digest of its data without `content`, which is all a later replacement of it is
// checked against). fold_surface() is the same pass over events already in memory.
#pragma once

#include <boost/json/object.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace acp::store {

/// What one event did to the surface.
struct FoldStep {
  enum class Kind { skipped, appended, replaced } kind = Kind::skipped;
  /// replaced: the positions [first, last] of the surface before the step that the event shadowed;
  /// the event's own node now sits at `first`. appended: the new node is at the end.
  std::size_t first = 0, last = 0;
};

class SurfaceFold {
public:
  /// Folds the event at log index `count()`. Throws FoldError and leaves the fold unchanged.
  FoldStep apply(const boost::json::object& event);

  /// Seqs on the surface, in surface order.
  std::vector<std::int64_t> nodes() const;
  std::size_t size() const { return nodes_.size(); }
  /// Events folded so far (the next expected seq).
  std::int64_t count() const { return count_; }

private:
  struct Node {
    std::int64_t seq;
    bool tool_result;
  };
  std::vector<Node> nodes_;
  /// Live tool/result nodes: seq -> SHA-256 of the canonical form of data-without-content.
  std::vector<std::pair<std::int64_t, std::array<unsigned char, 32>>> tool_digests_;
  std::int64_t count_ = 0;
};

/// Seqs on the surface, in surface order. `events` must be the raw log events (seq == index).
std::vector<std::int64_t> fold_surface(const std::vector<boost::json::object>& events);

/// SHA-256 of a canonical encoding under which two values are equal exactly when
/// boost::json::value::operator== says so (objects unordered, int64/uint64 by value, doubles apart).
std::array<unsigned char, 32> json_digest(const boost::json::value& v);

} // namespace acp::store
