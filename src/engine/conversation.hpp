// The conversation a model request carries, derived from the session log in this one place.
//
// Fed every raw log event in seq order (events read back from disk and the records this process
// appends alike), it keeps the current surface (harness-compat §2.1: appends, and replaces written
// by compaction) as role-tagged texts, and knows which turn each surface message belongs to, so a
// refused turn (turn/end error with code CONTENT_FILTER) drops out of every later request (ACP
// `refusal`: the prompt and everything after it in that turn leave the context). An injected
// reference snapshot written just before a turn/start belongs to that turn.
//
// Roles: user/steering messages (direct prompts, snapshots, compaction checkpoints) are user
// messages, each on its own; assistant text, tool calls and tool results (`[tool name] args`,
// `[result] text`: we offer the model no tools) merge into one assistant message, so roles alternate
// except for the deliberate snapshot-then-prompt pair. Reasoning never goes back to the model.
#pragma once

#include "llm/provider.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace acp::engine {

class Conversation {
public:
  /// One message of the current surface.
  struct Entry {
    std::int64_t seq = 0;
    std::int64_t turn = 0;  ///< 0 = outside any turn
    llm::Role role = llm::Role::user;
    std::string text;
    bool direct = false;      ///< a user/message from the user ({kind:"user"})
    bool checkpoint = false;  ///< a compaction checkpoint ({kind:"plugin",plugin:"compact"})
  };

  /// Consumes the next raw event (seq must equal next_seq()). Throws store::FoldError when a
  /// replace does not fit the surface.
  void observe(const boost::json::object& event);
  /// Seq the next observed event must have (= events observed).
  std::int64_t next_seq() const noexcept { return next_seq_; }
  /// The messages of the current surface, refused turns left out.
  std::vector<llm::Message> messages() const;
  /// The messages of surface entries [first, last), refused turns left out (same merging).
  std::vector<llm::Message> messages(std::size_t first, std::size_t last) const;
  /// The current surface, in surface order.
  const std::vector<Entry>& surface() const noexcept { return surface_; }
  bool refused(std::int64_t turn) const { return turn && refused_turns_.count(turn) > 0; }
  /// Forgets everything (before re-reading a log another process appended to).
  void clear() { *this = Conversation(); }

private:
  std::vector<Entry> surface_;
  std::unordered_set<std::int64_t> refused_turns_;
  std::int64_t next_seq_ = 0;
  std::int64_t open_turn_ = 0;
  std::int64_t last_turn_ = 0;
};

/// Text of the `text` blocks of a content array, joined with '\n'.
std::string content_text(const boost::json::value& content);

} // namespace acp::engine
