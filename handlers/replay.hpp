// The log → session/update translator used by session/load (https://agentclientprotocol.com/protocol/session-setup#loading-sessions).
//
// Fed every event of a log in order (the normalised shape, for either store generation), it yields
// what a client would have seen live: direct user messages as user_message_chunk; assistant text and
// reasoning as agent_message_chunk / agent_thought_chunk (from chunks, or from assistant/message for
// steps that have none); a direct message's images as image blocks when their objects are in the
// attachment store (and verify), other images as a text placeholder naming the attachment; tool calls and results
// as tool_call / tool_call_update cards (handlers/tool_card.hpp: kinds, titles, locations, diffs;
// each result with rawOutput {output, isError, exitStatus?});
// todo/write as plan; titles as session_info_update; a failed or interrupted turn as a short agent
// message saying so. Injected context (any user/message whose source is not the user) shows no user
// text; a reference snapshot shows as its card right after its direct message's user chunk (the
// next direct message for a snapshot written before it, as 45fc and our writers do; the previous
// one for a recall the 0.1.1 harness writes right after it); a compaction checkpoint as the
// compaction card where it sits (shadowed events replay as they were, and so does a tool result a
// prune replaced). Texts are whole: the caller cuts them into frames (text_chunks.hpp). Stateful: one
// turn's bookkeeping, plus the seqs of the log's compaction events; its only I/O is reading images.
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/json/object.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace acp::handlers {

/// The most of a tool's output a card's rawOutput holds (its `output`, cut with a note beyond).
inline constexpr std::size_t kMaxRawOutputBytes = 32 * 1024;

struct ReplayPlaces {
  std::string cwd;           ///< the session's working directory: relative tool paths are joined to it
  std::string harness_home;  ///< image attachments live under it; "" = not checked
  std::string session_id = {};  ///< what message ids derive from (message_id.hpp)
};

class Replayer {
public:
  Replayer() = default;
  explicit Replayer(ReplayPlaces places) : places_(std::move(places)) {}

  /// Appends the updates for one event to `out`.
  void on_event(const boost::json::object& event, std::vector<protocol::SessionUpdate>& out);

  /// A text or reasoning delta is most of a replay. For an `assistant/chunk` event whose only
  /// update would be one agent (1) or thought (2) chunk of plain text, does what on_event would and
  /// returns the update's kind (its SessionUpdate variant index), the text, a view into `event`, and
  /// its message id (valid until the next call); returns 0 and changes nothing for every other
  /// event, which then goes through on_event.
  std::size_t plain_chunk(const boost::json::object& event, std::string_view& text, std::string_view& message_id);

  /// Live only (a log holds no terminal: it is gone once released): the call `id` ran in the
  /// editor's terminal `terminal_id`, so its result card keeps the terminal, which the client goes
  /// on showing after release, with a line saying how the command ended in place of the output.
  void attach_terminal(std::string id, std::string terminal_id);

private:
  // One kind of event each (on_event dispatches on the type).
  void on_message(std::string_view type, const boost::json::object& event, const boost::json::object& data,
                  bool after_direct_message, bool after_tool_result, std::vector<protocol::SessionUpdate>& out);
  void on_chunk(const boost::json::object& data, std::vector<protocol::SessionUpdate>& out);
  void on_assistant_message(const boost::json::object& data, std::vector<protocol::SessionUpdate>& out);
  void on_tool_result(const boost::json::object& event, const boost::json::object& data,
                      std::vector<protocol::SessionUpdate>& out);
  void on_turn_end(const boost::json::object& event, const boost::json::object& data,
                   std::vector<protocol::SessionUpdate>& out);
  void show_call(std::string id, std::string_view name, const boost::json::value* arguments,
                 std::vector<protocol::SessionUpdate>& out);
  protocol::ToolCallUpdate result_update(const boost::json::object& data, std::string id);
  std::string display_text(const boost::json::value& content) const;
  void user_content(const boost::json::value& content, std::string id, std::vector<protocol::SessionUpdate>& out) const;
  /// The id of the assistant block at (turn, step, block) of `kind`; the last one is kept, as a
  /// block's chunks come in a run.
  const std::string& block_id(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t block);
  std::string seq_id(std::string_view kind, std::int64_t seq) const;

  ReplayPlaces places_;
  // Per turn (cleared at turn/end, so a long log costs no more than its largest turn):
  std::set<std::pair<std::int64_t, std::int64_t>> steps_with_chunks_;  ///< (turn, step) that streamed text
  std::optional<std::pair<std::int64_t, std::int64_t>> last_step_with_chunks_;  ///< a step's chunks come in a run
  std::set<std::string> tool_calls_shown_;
  /// write/edit calls waiting for their result, with the change their arguments ask for; erased
  /// when the result arrives (the only arguments kept).
  std::map<std::string, std::optional<protocol::ToolDiff>, std::less<>> pending_changes_;
  /// Calls running in the editor's terminal (attach_terminal), until their result.
  std::map<std::string, std::string, std::less<>> terminals_;
  // Across turns:
  /// An injected reference snapshot waiting for its direct message: (seq, source record).
  std::optional<std::pair<std::int64_t, boost::json::object>> pending_card_;
  /// Whether the previous event was a direct user message (a 0.1.1 recall follows it at once).
  bool after_direct_message_ = false;
  /// Whether the previous events were a tool result and any snapshots after it: a snapshot there is
  /// the agent's own reference (the recall tool), shown where it stands.
  bool after_tool_result_ = false;
  /// Seqs of compact/start and compact/summary events (not messages a checkpoint replaced).
  std::set<std::int64_t> compact_events_;
  std::string block_place_;  ///< block_id()'s last place and its id
  std::string block_id_;
};

} // namespace acp::handlers
