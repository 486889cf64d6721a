// A condition variable for coroutines on one executor (internal to transport/*.cpp: it pulls in
// Asio's timer). wait() suspends until notify() wakes every waiter; a notify() with nobody waiting
// is lost, so callers re-check their condition in a loop before waiting.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace acp::transport {

class WakeSignal {
public:
  explicit WakeSignal(boost::asio::any_io_executor ex) : timer_(std::move(ex), boost::asio::steady_timer::time_point::max()) {}
  // The expiry is never changed after construction: expires_at() would cancel the other waiters.
  boost::asio::awaitable<void> wait() {
    co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  void notify() { timer_.cancel(); }

private:
  boost::asio::steady_timer timer_;
};

} // namespace acp::transport
