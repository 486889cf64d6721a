#include "engine/work_queue.hpp"

#include "engine/session.hpp"

#include <algorithm>

namespace acp::engine {

PromptBudget::Share& PromptBudget::Share::operator=(Share&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PromptBudget::Share::release() noexcept {
  if (budget_) budget_->held_.fetch_sub(bytes_);
  budget_.reset();
  bytes_ = 0;
}

PromptBudget::Share PromptBudget::take(std::size_t bytes, const std::string& session_id) {
  std::size_t held = held_.load();
  do {
    if (held > 0 && held + bytes > limit_) throw ServerBusy(session_id, held, limit_);
  } while (!held_.compare_exchange_weak(held, held + bytes));
  return Share(shared_from_this(), bytes);
}

std::shared_ptr<QueueEntry> WorkQueue::push(std::shared_ptr<Turn> turn, std::size_t bytes, const std::string& session_id,
                                            PromptBudget::Share share) {
  std::size_t waiting = 0, held = 0, loads = 0;
  for (std::size_t i = 1; i < entries_.size(); ++i) {
    if (!entries_[i]->turn) {
      ++loads;
      continue;
    }
    ++waiting;
    held += entries_[i]->bytes;
  }
  if (turn) {
    // Beside the count, the text: eight prompts of a maximal frame each would hold half a gigabyte.
    if (waiting >= kMaxQueuedPrompts || (waiting > 0 && held + bytes > kMaxQueuedPromptBytes))
      throw QueueFull(session_id);
  } else if (loads >= kMaxQueuedPrompts) {
    // Loads hold no text, but each waits as a coroutine with its reply: bounded like prompts.
    throw QueueFull(session_id);
  }
  auto entry = std::make_shared<QueueEntry>(executor_, std::move(turn), bytes, std::move(share));
  entries_.push_back(entry);
  if (entries_.size() == 1) entry->go.set();
  return entry;
}

void WorkQueue::remove(const std::shared_ptr<QueueEntry>& entry) {
  auto it = std::find(entries_.begin(), entries_.end(), entry);
  if (it == entries_.end()) return;
  const bool was_first = it == entries_.begin();
  entries_.erase(it);
  // Woken through the executor: the work that just ended answers before the next one produces.
  if (was_first && !entries_.empty()) entries_.front()->go.set();
  changed_.notify_all();
}

void WorkQueue::cancel_prompts() {
  for (auto& entry : entries_)
    if (entry->turn) entry->turn->cancel();
}

boost::asio::awaitable<void> WorkQueue::drained() {
  while (!entries_.empty()) co_await changed_.wait();
}

QueueSlot::QueueSlot(std::shared_ptr<Session> session, std::shared_ptr<QueueEntry> entry)
    : session_(std::move(session)), entry_(std::move(entry)) {}

QueueSlot& QueueSlot::operator=(QueueSlot&& other) noexcept {
  if (this != &other) {
    leave();
    session_ = std::move(other.session_);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

QueueSlot::~QueueSlot() { leave(); }

const std::shared_ptr<Turn>& QueueSlot::turn() const {
  static const std::shared_ptr<Turn> none;
  return entry_ ? entry_->turn : none;
}

void QueueSlot::leave() {
  if (!entry_) return;
  if (entry_->turn) {
    entry_->turn->done = true;
    entry_->turn->finished.set();
    if (session_->turn == entry_->turn) session_->turn.reset();
  }
  session_->queue.remove(entry_);
  entry_.reset();
  session_.reset();
}

} // namespace acp::engine
