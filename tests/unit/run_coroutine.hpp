// Runs one coroutine to its end on an io_context, for tests: its result, or its exception
// rethrown. `cancel_after` emits terminal cancellation on it after that long (a turn's cancel).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <exception>
#include <optional>

template <class T>
T run_coroutine(boost::asio::io_context& io, boost::asio::awaitable<T> task,
                std::optional<std::chrono::milliseconds> cancel_after = std::nullopt) {
  boost::asio::cancellation_signal cancel;
  boost::asio::steady_timer timer(io);
  if (cancel_after) {
    timer.expires_after(*cancel_after);
    timer.async_wait([&](boost::system::error_code ec) {
      if (!ec) cancel.emit(boost::asio::cancellation_type::terminal);
    });
  }
  std::optional<T> out;
  std::exception_ptr error;
  bool done = false;
  boost::asio::co_spawn(io, std::move(task),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, T v) {
                          done = true;
                          error = e;
                          if (!e) out = std::move(v);
                          timer.cancel();
                        }));
  io.restart();
  while (!done) io.run_one();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}
