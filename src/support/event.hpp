// An awaitable event for coroutines on one executor: the one "wake whoever waits" of the project
// (turn finished, a replay slot freed, a request done, output written, a send admitted).
//
// set() wakes every waiter and stays set until reset(): a wait that starts later returns at once.
// notify_all()/notify_one() wake those waiting now and are lost when nobody waits (a condition
// variable's notify: waiters re-check their condition in a loop). Not thread-safe: call everything
// on the executor the event was made with.
//
// Built on a timer that never expires (its expiry is never changed: expires_at() would cancel the
// waiters); waking is cancelling its waits. A wait is also ended by cancelling the awaiting
// coroutine (per-operation cancellation) and by destroying the event: the waiter then resumes
// without touching the event.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace acp::support {

class Event {
public:
  explicit Event(boost::asio::any_io_executor ex) : timer_(std::move(ex), boost::asio::steady_timer::time_point::max()) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Wakes every waiter; later waits return at once until reset(). Setting twice is harmless.
  void set() {
    set_ = true;
    timer_.cancel();
  }
  void reset() noexcept { set_ = false; }
  bool is_set() const noexcept { return set_; }
  /// Wakes every current waiter (nothing is remembered).
  void notify_all() { timer_.cancel(); }
  /// Wakes the longest waiting one (nothing is remembered).
  void notify_one() { timer_.cancel_one(); }

  /// Returns at once when set; otherwise suspends until set(), a notify, or the event's
  /// destruction (true), or until the awaiting coroutine is cancelled (false). After a wake-up the
  /// event may be gone: nothing here touches it then.
  boost::asio::awaitable<bool> wait() {
    if (set_) co_return true;
    co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    auto state = co_await boost::asio::this_coro::cancellation_state;
    co_return state.cancelled() == boost::asio::cancellation_type::none;
  }

private:
  boost::asio::steady_timer timer_;
  bool set_ = false;
};

} // namespace acp::support
