// The log → session/update translator used by session/load (acp-protocol.md §3 "session/load rule").
//
// Fed every raw event of a log in order, it yields what a client would have seen live: direct user
// messages as user_message_chunk; assistant text and reasoning as agent_message_chunk /
// agent_thought_chunk (from chunks, or from assistant/message for steps that have none); tool calls
// and results as generic tool_call / tool_call_update cards; todo/write as plan; titles as
// session_info_update; a failed or interrupted turn as a short agent message saying so. Injected
// context (any user/message whose source is not the user) shows no user text; a reference snapshot
// shows as its card right after the next direct message's user chunk; a compaction checkpoint as
// the compaction card where it sits (shadowed events replay as they were). Stateful, bounded by
// one turn's bookkeeping; pure (no I/O).
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace acp::handlers {

class Replayer {
public:
  /// Appends the updates for one raw event to `out`.
  void on_event(const boost::json::object& event, std::vector<protocol::SessionUpdate>& out);

private:
  std::set<std::pair<std::int64_t, std::int64_t>> steps_with_chunks_;  ///< (turn, step) that streamed text
  std::optional<std::pair<std::int64_t, std::int64_t>> last_step_with_chunks_;  ///< a step's chunks come in a run
  std::set<std::string> tool_calls_shown_;
  /// An injected reference snapshot waiting for its direct message: (seq, source record).
  std::optional<std::pair<std::int64_t, boost::json::object>> pending_card_;
  /// Seqs of compact/start and compact/summary events (not messages a checkpoint replaced).
  std::set<std::int64_t> compact_events_;
};

} // namespace acp::handlers
