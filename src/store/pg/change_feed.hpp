// A server process's ear on the database: LISTEN on the sessions channel (schema.hpp) on a
// connection of its own, served by a thread of its own that waits on the socket (no polling) and is
// joined at destruction. Every notification, and every loss or regain of the connection, moves a
// counter on: a listing cached at one value of current() is good while current() says the same.
// While the connection is down current() is 0, so nothing cached is trusted then, and the
// first value after a reconnect differs from every earlier one (a lost connection relists).
#pragma once

#include "store/pg/connection.hpp"
#include "support/unique_fd.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

namespace acp::store::pg {

class ChangeFeed {
public:
  /// Starts listening at once (connecting in the background; reconnecting with a capped backoff).
  ChangeFeed(std::string url, ConnectOptions options);
  /// Stops and joins the thread without waiting for a connect in progress.
  ~ChangeFeed();
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  /// The counter while listening (never 0), 0 while not.
  std::uint64_t current() const noexcept;
  /// Waits until listening, up to `timeout` (start-up, tests). True when listening.
  bool wait_listening(std::chrono::milliseconds timeout);

private:
  void run(std::stop_token stop);
  /// Waits for `fd` to be ready (or only for the stop when fd < 0) up to `timeout` (-1: no limit).
  /// 1: ready, 0: timed out, -1: stopped.
  int wait(int fd, bool write, int timeout_ms);
  void moved(bool up);

  const std::string url_;
  const ConnectOptions options_;
  support::UniqueFd wake_fd_;  ///< eventfd: written to stop the thread out of any wait
  /// (counter << 1) | listening
  std::atomic<std::uint64_t> state_{0};
  std::mutex mu_;
  std::condition_variable changed_;
  std::jthread thread_;  ///< last: started after everything it uses
};

} // namespace acp::store::pg
