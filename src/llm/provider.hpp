// The one interface through which every model is reached (echo, DeepSeek, OpenAI-compatible).
//
// A provider receives the ordered, role-tagged conversation assembled by the caller (from memory or
// from the stored surface; providers never see the store) and streams deltas back through a sink.
// Cancellation is the awaiting coroutine's cancellation slot (asio terminal cancellation, emitted by
// session/cancel): a provider must stop promptly and return with `stop == StopKind::cancelled`.
// Providers run on the connection's strand; the sink is called on that strand.
#pragma once

#include "support/utf8.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace acp::llm {

enum class Role { system, user, assistant, tool };

/// "system", "user", "assistant" or "tool" (the OpenAI names).
constexpr std::string_view role_name(Role role) noexcept {
  switch (role) {
  case Role::system: return "system";
  case Role::user: return "user";
  case Role::assistant: return "assistant";
  case Role::tool: return "tool";
  }
  return "user";
}

/// A call the model made, sent back with its assistant message.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  ///< the model's raw JSON text, unchanged
};

/// An image of a user message: its placeholder text stands at text[at, at + length). A provider
/// whose model takes images sends `data` there instead when it is loaded; when it is not (the
/// model takes none, or the attachment is missing or damaged) the placeholder is what the model reads.
struct MessageImage {
  std::size_t at = 0;
  std::size_t length = 0;
  std::string attachment;  ///< the log block's attachment reference, as JSON text
  std::string media_type;
  std::shared_ptr<const std::string> data = {};  ///< the image's bytes, once loaded
};

/// One request message in OpenAI's shape: an assistant message may carry tool calls, and each call
/// is answered by a tool message (tool_call_id) before the next user or assistant message.
struct Message {
  Role role;
  std::string text;
  std::vector<ToolCall> tool_calls = {};  ///< assistant only
  std::string tool_call_id = {};          ///< tool only: the call this message answers
  std::vector<MessageImage> images = {};  ///< user only, in text order
};

/// A tool the model may call: an OpenAI function.
struct ToolDefinition {
  std::string name;
  std::string description;
  std::string parameters;  ///< its JSON Schema as JSON text (valid JSON: it is sent as it is)
};

/// What a request is for: an answer to the user, or the summary of a compaction (the echo model
/// answers the latter with its deterministic summary).
enum class Purpose { answer, summary };

struct Request {
  std::vector<Message> messages;
  std::string model;  ///< may be empty for providers without models (echo)
  Purpose purpose = Purpose::answer;
  std::optional<std::int64_t> max_tokens;  ///< answer length limit sent to the provider, when set
  std::vector<ToolDefinition> tools = {};  ///< offered to the model; none = it can only answer
};

enum class DeltaKind { text, reasoning, tool_call };

struct Delta {
  DeltaKind kind;
  std::string text;  ///< tool_call: a fragment of the call's arguments (JSON text, streamed)
  // tool_call only: which call of the answer (in order), and its id and name once known (the
  // first fragment of a call carries them, later ones may not).
  std::size_t call_index = 0;
  std::string call_id = {};
  std::string call_name = {};
};

struct Usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;  ///< reasoning tokens included (OpenAI's completion_tokens)
  std::optional<std::int64_t> cached_input_tokens;
  std::optional<std::int64_t> reasoning_tokens;
  /// Not a count of the model's tokens (the echo model logs bytes): whoever reports usage to a
  /// client estimates it instead (llm/token_estimate.hpp).
  bool stand_in = false;
};

/// Why the model stopped; maps onto ACP's StopReason. `max_turn_requests` is the turn's (its step
/// limit), never a provider's.
enum class StopKind { end_turn, max_tokens, refusal, cancelled, max_turn_requests };

struct Completion {
  StopKind stop = StopKind::end_turn;
  std::optional<Usage> usage;
  std::string provider;  ///< provenance written to assistant/message
  std::string model;
  /// The calls the model made, in order, arguments whole: when any, the answer is not over (the
  /// caller runs them and asks again); `stop` is then end_turn.
  std::vector<ToolCall> tool_calls = {};
};

/// A provider failure with the stable code of the error table (docs/decisions.md#errors-on-the-wire) (PROVIDER_*, or AUTH_REQUIRED for 401/403).
class ProviderError : public std::runtime_error {
public:
  /// `message` may quote the provider (a reason phrase, a stream's bytes): it is made text here.
  ProviderError(std::string code, std::string message, int http_status = 0, bool output_started = false)
      : std::runtime_error(support::valid_utf8_text(message)), code_(std::move(code)), status_(http_status),
        output_started_(output_started) {}
  const std::string& code() const noexcept { return code_; }
  int http_status() const noexcept { return status_; }
  bool output_started() const noexcept { return output_started_; }

private:
  std::string code_;
  int status_;
  bool output_started_;
};

/// Where a provider's deltas go. Calling it hands over one delta at once; room() is awaited before
/// producing more (the next socket read, the next echo word) and returns when the consumer can take
/// more — its log writes and its client's output queue have caught up — or when the stream is
/// cancelled (check the cancellation state after it). This is what bounds a running turn's memory:
/// a provider that never awaits room() is not slowed, and a consumer without a gate never waits.
class DeltaSink {
public:
  using Deliver = std::function<void(const Delta&)>;
  using Room = std::function<boost::asio::awaitable<void>()>;

  DeltaSink() = default;
  /// Any callable taking a delta (no gate).
  template <class F>
    requires std::is_invocable_v<F&, const Delta&> && (!std::is_same_v<std::remove_cvref_t<F>, DeltaSink>)
  DeltaSink(F deliver) : deliver_(std::move(deliver)) {}
  DeltaSink(Deliver deliver, Room room) : deliver_(std::move(deliver)), room_(std::move(room)) {}

  void operator()(const Delta& delta) const { deliver_(delta); }
  boost::asio::awaitable<void> room() const {
    if (room_) co_await room_();
  }

private:
  Deliver deliver_;
  Room room_;
};

class Provider {
public:
  virtual ~Provider() = default;
  /// Name written as provenance.provider ("echo", "deepseek", "openai").
  virtual std::string name() const = 0;
  /// Streams one completion. Throws ProviderError on failure; returns StopKind::cancelled when the
  /// awaiting coroutine is cancelled.
  virtual boost::asio::awaitable<Completion> stream(const Request& request, DeltaSink sink) = 0;
};

} // namespace acp::llm
