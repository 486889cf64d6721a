// Small pieces for racing operations with Asio's awaitable operators (`a || b`), used wherever a
// wait has a time limit: a sleep, and an operation's outcome as a value. `a || b` completes with
// the first operation that *succeeds* (one that throws is taken for still running while the other
// runs), so a failing call raced against a timer must be wrapped in outcome_of, or its failure
// would read as a timeout.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <utility>

namespace acp::support {

/// Suspends for `d` on the current executor; throws when the awaiting operation is cancelled.
inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, d);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

/// Runs `op`; its result, or the exception it threw, as a value (never throws itself).
template <class T>
boost::asio::awaitable<std::pair<std::exception_ptr, T>> outcome_of(boost::asio::awaitable<T> op) {
  try {
    co_return std::pair<std::exception_ptr, T>{nullptr, co_await std::move(op)};
  } catch (...) {
    co_return std::pair<std::exception_ptr, T>{std::current_exception(), T{}};
  }
}

} // namespace acp::support
