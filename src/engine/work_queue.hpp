// A session's work in the order it arrived: prompts (a turn, a slash command) and same-process
// loads. One entry runs at a time; the others wait their turn, woken in order, never polled.
//
// ACP leaves a prompt sent while a turn runs to the agent
// (https://agentclientprotocol.com/protocol/prompt-turn): editors let the user type again as soon
// as they press Stop, so such a prompt is queued rather than refused. Each prompt brings its own
// cancellation object (Turn), made when it arrives, so session/cancel reaches the running prompt
// and every one waiting behind it, and $/cancel_request reaches one of them alone. A load waits
// here too: its replay then holds everything earlier, and nothing of earlier work follows its answer.
#pragma once

#include "support/event.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace acp::engine {

struct Turn;
struct Session;

/// Prompts that may wait behind the running one; a further prompt is refused (QueueFull).
inline constexpr std::size_t kMaxQueuedPrompts = 8;
/// Prompt text the waiting prompts of a session may hold together (the first one may hold more).
inline constexpr std::size_t kMaxQueuedPromptBytes = 64u << 20;

/// A prompt refused because its session's queue is full.
class QueueFull : public std::runtime_error {
public:
  explicit QueueFull(std::string id)
      : std::runtime_error("session busy: " + std::to_string(kMaxQueuedPrompts) +
                           " prompts already wait behind the running one"),
        id_(std::move(id)) {}
  const std::string& session_id() const noexcept { return id_; }

private:
  std::string id_;
};

/// A prompt refused because the connection's prompts already hold their PromptBudget's limit.
class ServerBusy : public std::runtime_error {
public:
  ServerBusy(std::string id, std::size_t held, std::size_t limit)
      : std::runtime_error("server busy: prompts waiting or running in this connection's sessions hold " +
                           std::to_string(held) + " bytes"),
        id_(std::move(id)), held_(held), limit_(limit) {}
  const std::string& session_id() const noexcept { return id_; }
  std::size_t held_bytes() const noexcept { return held_; }
  std::size_t limit() const noexcept { return limit_; }

private:
  std::string id_;
  std::size_t held_, limit_;
};

/// The prompt text all of a connection's sessions may hold together, running prompts included
/// (--max-held-prompt-bytes): each session's own bounds leave the number of sessions open, and without
/// this a client with many sessions could make the server hold any amount of prompt text. Taken when a
/// prompt queues and given back when its entry is gone, on whichever thread that happens.
class PromptBudget : public std::enable_shared_from_this<PromptBudget> {
public:
  /// A prompt's part of the budget; given back when destroyed.
  class Share {
  public:
    Share() = default;
    Share(Share&& other) noexcept : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
    Share& operator=(Share&& other) noexcept;
    ~Share() { release(); }

  private:
    friend class PromptBudget;
    Share(std::shared_ptr<PromptBudget> budget, std::size_t bytes) : budget_(std::move(budget)), bytes_(bytes) {}
    void release() noexcept;
    std::shared_ptr<PromptBudget> budget_;
    std::size_t bytes_ = 0;
  };

  /// Takes `bytes`, or throws ServerBusy when that would pass the bound. When nothing is held any
  /// prompt is taken: one maximal frame must always be able to run.
  Share take(std::size_t bytes, const std::string& session_id);
  std::size_t held() const noexcept { return held_.load(); }
  std::size_t limit() const noexcept { return limit_; }
  explicit PromptBudget(std::size_t limit) : limit_(limit) {}

private:
  const std::size_t limit_;
  std::atomic<std::size_t> held_{0};
};

struct QueueEntry {
  QueueEntry(const boost::asio::any_io_executor& ex, std::shared_ptr<Turn> turn_, std::size_t bytes_,
             PromptBudget::Share share_)
      : turn(std::move(turn_)), bytes(bytes_), share(std::move(share_)), go(ex) {}
  std::shared_ptr<Turn> turn;  ///< a prompt's cancellation object; null for a load
  std::size_t bytes;           ///< the prompt text it holds while it waits
  PromptBudget::Share share;   ///< its part of the connection's PromptBudget (none for a load)
  support::Event go;           ///< set once it is first in line
};

class WorkQueue {
public:
  explicit WorkQueue(const boost::asio::any_io_executor& ex) : executor_(ex), changed_(ex) {}

  /// Appends an entry (first in line: its `go` is set at once). Throws QueueFull for a prompt
  /// beyond the bounds, and for a load when eight loads already wait.
  /// `share`: the prompt's part of the connection's budget, kept as long as the entry lives.
  std::shared_ptr<QueueEntry> push(std::shared_ptr<Turn> turn, std::size_t bytes, const std::string& session_id,
                                   PromptBudget::Share share = {});
  /// Takes an entry out, running or not; the next one in line may start.
  void remove(const std::shared_ptr<QueueEntry>& entry);
  /// Cancels every prompt in line, the running one included (session/cancel, close, shutdown).
  void cancel_prompts();
  bool empty() const noexcept { return entries_.empty(); }
  /// Returns once nothing is in line.
  boost::asio::awaitable<void> drained();

private:
  boost::asio::any_io_executor executor_;
  std::deque<std::shared_ptr<QueueEntry>> entries_;  ///< front: the running entry
  support::Event changed_;
};

/// A place in a session's queue. Destroying it (the work is over) lets the next entry start and
/// clears the session's running turn.
class QueueSlot {
public:
  QueueSlot() = default;
  QueueSlot(std::shared_ptr<Session> session, std::shared_ptr<QueueEntry> entry);
  QueueSlot(QueueSlot&& other) noexcept = default;
  QueueSlot& operator=(QueueSlot&& other) noexcept;
  ~QueueSlot();

  const std::shared_ptr<Session>& session() const noexcept { return session_; }
  const std::shared_ptr<QueueEntry>& entry() const noexcept { return entry_; }
  /// The prompt's turn (null for a load).
  const std::shared_ptr<Turn>& turn() const;

private:
  void leave();
  std::shared_ptr<Session> session_;
  std::shared_ptr<QueueEntry> entry_;
};

} // namespace acp::engine
