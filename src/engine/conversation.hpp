// The conversation a model request carries, derived from the session log in this one place.
//
// Fed every normalised log event in seq order (events read back from disk and the records this
// process appends alike), it keeps the current surface (docs/store-format.md#folding: appends, and replaces
// written by compaction) as request messages, and knows which turn each surface message belongs to,
// so a refused turn (turn/end error with code CONTENT_FILTER) drops out of every later request (ACP
// `refusal`: the prompt and everything after it in that turn leave the context). An injected
// reference snapshot written just before a turn/start belongs to that turn.
//
// Messages are what the harness's adapters send: user/steering messages (direct prompts, snapshots,
// compaction checkpoints) are user messages, each on its own; an assistant/message is an assistant
// message whose `tool-call` blocks are its tool_calls; a tool/result is a tool message answering its
// callId ("(no output)" when it has no text, as the harness sends it). A message's text blocks are
// joined with nothing (request_text(); replay and references keep content_text()'s '\n'), an image
// is a text placeholder (a user message's images are also kept, for models that take them:
// load_images()), reasoning never goes back to the model. Assistant messages that follow each
// other (steps without calls between them) still merge, texts joined by '\n'.
//
// OpenAI's rule holds in every request: an assistant message's calls are answered by tool messages
// right after it, before any other message. A call's answer is its first result later on the
// surface, moved up to it; a call with no result on the surface (interrupted before a crash repair
// wrote one, or its result shadowed by a compaction) is answered by kNoToolResult rather than
// dropped, so the model's own message stays as it wrote it and the model learns the outcome is
// unknown, as the harness's crash repair tells it. A result whose call is not on the surface, and a
// second result for one call, are left out.
#pragma once

#include "llm/provider.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace acp::engine {

/// The answer given for a call whose result is not on the surface.
inline constexpr std::string_view kNoToolResult = "(no result was recorded for this tool call)";

class Conversation {
public:
  /// One message of the current surface.
  struct Entry {
    std::int64_t seq = 0;
    std::int64_t turn = 0;  ///< 0 = outside any turn
    llm::Message message{llm::Role::user, {}};  ///< as sent, before calls are paired with their answers
    bool direct = false;      ///< a user/message from the user ({kind:"user"})
    bool checkpoint = false;  ///< a compaction checkpoint ({kind:"plugin",plugin:"compact"})
  };

  /// Consumes the next raw event (seq must equal next_seq()). Throws store::FoldError when a
  /// replace does not fit the surface.
  void observe(const boost::json::object& event);
  /// Consumes `events` events known not to be surface events without their records (a turn's
  /// assistant/chunk events this process wrote and did not keep).
  void skip(std::int64_t events) noexcept { next_seq_ += events; }
  /// Seq the next observed event must have (= events observed).
  std::int64_t next_seq() const noexcept { return next_seq_; }
  /// The messages of the current surface, refused turns left out.
  std::vector<llm::Message> messages() const;
  /// The messages of surface entries [first, last), refused turns left out (same pairing and merging).
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

/// The blocks of a content array joined with `separator`: `text` blocks as they are, `image` blocks as
/// `image(block)` when given (else left out like every other kind).
std::string join_content(const boost::json::value& content, std::string_view separator,
                         const std::function<std::string(const boost::json::object&)>& image = {});
/// Loads the images of `messages` (user messages' `images`) from the attachment store under
/// `harness_home`, each verified as the harness verifies it; one that is missing or does not match
/// stays unloaded, its placeholder standing. File reads: call it off the connection's thread.
void load_images(std::vector<llm::Message>& messages, const std::string& harness_home);

/// Text of the `text` blocks of a content array, joined with '\n' (replay, reference projection).
std::string content_text(const boost::json::value& content);

/// A content array as a model request carries it: the `text` blocks joined with nothing, as the
/// harness's adapters join them, and each `image` block replaced in place by
/// `[image: <name, else attachmentId>, <mediaType>, <bytes> bytes omitted]` (parts it lacks left out).
std::string request_text(const boost::json::value& content);

} // namespace acp::engine
