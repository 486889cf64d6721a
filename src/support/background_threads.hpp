// Threads of their own for work that must not hold the shared pool: bulk reads (session/load
// replays, reference preparation, whole-log re-reads) at a lower CPU priority than the connection
// thread and the pool, and lock waits (which only sleep). On a 2-core machine a 200 MB
// read competes for the CPU with a prompt's few milliseconds of work; the kernel should run the
// prompt first (measured by bench/isolation_bench.py).
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <memory>

namespace acp::support {

/// Lowers the calling thread's CPU priority by 10 nice levels (at most to 19; on Linux nice is per
/// thread). Best effort:
/// it cannot be undone without privileges, so only threads that do nothing else call it.
void lower_thread_priority() noexcept;

/// `count` threads (at lowered priority unless `lowered` is false) running what is posted to
/// executor(), in order: at most `count` jobs run at once, the others queue. The threads start
/// when the first work is posted, not before. With `block_signals` they block every signal, as
/// Asio's thread_pool does (signals then go to other threads); without, they have the signal mask
/// of the thread that constructed this (a lock wait is interrupted by a signal aimed at its
/// thread, store/session_lock.cpp). The destructor (or join()) finishes the queued work and joins
/// them.
class BackgroundThreads {
public:
  explicit BackgroundThreads(std::size_t count, bool lowered = true, bool block_signals = false);
  ~BackgroundThreads();
  BackgroundThreads(const BackgroundThreads&) = delete;
  BackgroundThreads& operator=(const BackgroundThreads&) = delete;

  boost::asio::any_io_executor executor() const;
  /// Runs what is queued, then joins the threads; nothing may be posted after it.
  void join();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::support
