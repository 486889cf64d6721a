// Runs blocking store work (lock waits of up to 2 s, fsync, whole-log reads) on the thread pool,
// so the connection thread keeps serving other requests meanwhile; the awaiting coroutine resumes
// on its own executor with the result, or the exception rethrown.
//
// Implemented with async_initiate and plain lambdas, not as a coroutine taking the callable: GCC 12
// destroys by-value coroutine parameters of closure type twice in some co_await expressions. For
// the same reason, callers keep the callable in a named local rather than a temporary.
#pragma once

#include "handlers/handler_context.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <optional>
#include <type_traits>

namespace acp::handlers {

/// The result arrives as std::optional (engaged unless an exception is rethrown) because awaitable
/// results must be default-constructible; `void` work yields `bool` (always true).
template <class F> auto run_blocking(HandlerContext& ctx, F& work) {
  using R = std::invoke_result_t<F&>;
  using Out = std::conditional_t<std::is_void_v<R>, bool, R>;
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr, std::optional<Out>)>(
      [pool = ctx.blocking, &work](auto handler) {
        auto home = boost::asio::get_associated_executor(handler);
        boost::asio::post(pool, [handler = std::move(handler), home, &work]() mutable {
          std::exception_ptr error;
          std::optional<Out> result;
          try {
            if constexpr (std::is_void_v<R>) {
              work();
              result.emplace(true);
            } else {
              result.emplace(work());
            }
          } catch (...) {
            error = std::current_exception();
          }
          boost::asio::post(home, [handler = std::move(handler), error, result = std::move(result)]() mutable {
            std::move(handler)(error, std::move(result));
          });
        });
      },
      boost::asio::use_awaitable);
}

} // namespace acp::handlers
