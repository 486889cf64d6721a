// Runs blocking work (file I/O, fsync, lock waits, log reads) on another executor — a session's
// strand or the pool — and resumes the awaiting coroutine on its own executor with the result or
// the rethrown exception. The connection thread never blocks.
//
// Written with async_initiate and plain lambdas rather than as a coroutine taking the callable:
// GCC 12 destroys by-value coroutine parameters of closure type twice in some co_await
// expressions. For the same reason callers keep the callable in a named local.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <memory>
#include <utility>
#include <optional>
#include <type_traits>

namespace acp::engine {

/// The result arrives as std::optional (engaged unless an exception is rethrown) because awaitable
/// results must be default-constructible; `void` work yields `bool` (always true).
template <class Executor, class F> auto offload(const Executor& where, F& work) {
  using R = std::invoke_result_t<F&>;
  using Out = std::conditional_t<std::is_void_v<R>, bool, R>;
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr, std::optional<Out>)>(
      [where, &work](auto handler) {
        auto home = boost::asio::get_associated_executor(handler);
        boost::asio::post(where, [handler = std::move(handler), home, &work]() mutable {
          // The outcome moves to the awaiting side whole: the worker must keep no reference to an
          // exception once posted, or its release here could race the other side reading it (TSan
          // cannot see libstdc++'s reference count order the two).
          auto outcome = std::make_unique<std::pair<std::exception_ptr, std::optional<Out>>>();
          try {
            if constexpr (std::is_void_v<R>) {
              work();
              outcome->second.emplace(true);
            } else {
              outcome->second.emplace(work());
            }
          } catch (...) {
            outcome->first = std::current_exception();
          }
          boost::asio::post(home, [handler = std::move(handler), outcome = std::move(outcome)]() mutable {
            std::move(handler)(std::move(outcome->first), std::move(outcome->second));
          });
        });
      },
      boost::asio::use_awaitable);
}

} // namespace acp::engine
