// What a forked session starts with (session/fork; docs/store-format.md#forked-sessions): a prefix of
// its source's log, copied event by event with the same seqs, so every seq inside it (surface
// replaces, sourceEventSeqs, compaction ranges, title messageSeqs) still means the same event, and
// the fork's fold, conversation, compaction state and replay are the source's at that point. The
// header names the source (`parentSession`) and the copied length (`seedLength`), the harness's own
// fields for a session seeded from another; a `dsh-acp/fork` event after the seed says more.
#pragma once

#include "store/new_event.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::store {

inline constexpr std::string_view kForkEvent = "dsh-acp/fork";

/// Decides, fed a source log's normalised events in order, which prefix of it a fork holds.
///
/// Without a fork point: the whole committed log. With one (`at_point`, true for the first event
/// that shows the message forked at): the events through that message — a text block streamed in chunks runs to
/// its step's assistant/message — and, when no other message follows before its turn ends, the
/// rest of the turn through its turn/end. A turn still open at the cut (a fork point inside a turn,
/// or a source whose turn is running or was interrupted) is closed as crash repair closes it
/// (LogState::closers: results for tool calls that have none, step/end, turn/end interrupted).
class ForkSeed {
public:
  /// Called for each event until it returns true; empty: no fork point.
  using FindPoint = std::function<bool(const boost::json::object& event)>;
  explicit ForkSeed(FindPoint at_point) : at_point_(std::move(at_point)) {}

  /// Takes the next event. Returns false once the prefix is decided: later events are not needed.
  bool observe(boost::json::object&& event);
  /// True when the fork point was among the events (always true without one).
  bool reached() const noexcept { return !at_point_ || phase_ != Phase::copying; }
  /// Events copied from the source so far.
  std::int64_t copied() const noexcept { return static_cast<std::int64_t>(kept_.size()); }
  /// The seed: the copied events, then the closers of a turn left open. Call once, after the last
  /// event (or once observe() returned false).
  std::vector<boost::json::object> finish();

private:
  enum class Phase { copying, to_message_end, to_turn_end, done };
  void keep(boost::json::object&& event);
  FindPoint at_point_;
  Phase phase_ = Phase::copying;
  std::vector<boost::json::object> kept_;
  /// After the message forked at: kept only when its turn ends before another message.
  std::vector<boost::json::object> pending_;
};

/// Where a fork came from, as its `dsh-acp/fork` event records it.
struct ForkProvenance {
  std::string session_id;             ///< the source session
  std::optional<std::string> store;   ///< the source's store (PostgreSQL: its redacted URL)
  std::optional<std::string> owner;   ///< the source's owner (PostgreSQL)
  std::optional<std::int64_t> through_seq;  ///< the last source event copied; none: it was empty
  std::optional<std::string> message_id;    ///< the fork point the client asked for
  std::int64_t seed_length = 0;       ///< events of the seed (copied ones and closers)
  /// The source's "always" permission rules and mode apply to the fork: its own sessions' do, someone
  /// else's do not (engine/permission_log.hpp reads this field).
  bool inherits_choices = true;
};

/// `{"type":"dsh-acp/fork","data":{"source":{"sessionId",[store],[owner]},[throughSeq],[messageId],
/// "seedLength","inheritsChoices"},"ignorable":true}` (schemas/session-event.schema.json).
NewEvent fork_event(const ForkProvenance& provenance);

/// A normalised record as an event to append again (its seq and envelope extras dropped; the
/// writer assigns the seq, which is the same when the records are appended in order from 0).
NewEvent as_new_event(boost::json::object&& record);

} // namespace acp::store
