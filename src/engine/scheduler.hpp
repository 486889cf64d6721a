// Where the engine's work runs: one object owning the executors, the session strands, the
// background thread groups and the replay slots (as clangd's TUScheduler owns its workers), so the
// Engine asks for a place to run rather than keeping pools of its own.
//
// Scheduling model
// - The engine lives on the connection's executor (one thread). Its coroutines run there and only
//   there; they never block: every file operation — create, append, fsync, lock wait, log read,
//   index save — is offloaded.
// - Each session has a strand over the shared thread pool (session_strand()): that session's file
//   work is serialised on it (appends keep their order without locks), while different sessions
//   proceed in parallel. Session-less store work (listing, lookup, delete) runs on the pool
//   directly. Nothing that may take long runs there, so one session's append never queues behind
//   another session's wait:
// - Taking a session's write lock is tried at once (on the strand or pool); only when another
//   writer holds it does the wait (up to 2 s) move to the lock-wait threads, bounded (waits beyond
//   them queue, each still ending at its own deadline): with_lock().
// - Bulk reads run on threads of their own at a lower CPU priority (support::BackgroundThreads),
//   bounded: reference preparation and whole-log re-reads on bulk_reads(), replays on the replay
//   threads (replay()). Reference preparation reads its sources on reader threads that the
//   reference service joins before it returns.
// - Every offloaded job that may take long is stoppable: lock waits, reference reads and re-reads
//   observe their turn's stop token, replays and deletes' lock waits the scheduler's (stop()), so a
//   shutdown never waits for them.
// - One cancellation object per turn (Turn): session/cancel, session/close and shutdown cancel it;
//   the model stream, the reference reads and any waits of the turn observe it. Every child task of
//   a turn (reads, writes, the model stream) is awaited before the turn completes, and the turn's
//   `finished` event wakes whoever waits for it. Nothing sleep-polls.
// - The conversation sent to the model is derived from the log by Conversation (one fold), fed the
//   records we append and, when another process appended, the log read back.
// - Compaction (compaction.hpp) runs inside a turn that holds the session's write lock: its summary
//   request is a model stream under the turn's cancellation object, its records are appended on the
//   strand (the checkpoint batch fsynced) and observed by the Conversation like any other.
#pragma once

#include "engine/offload.hpp"
#include "store/errors.hpp"
#include "store/session_lock.hpp"
#include "support/background_threads.hpp"
#include "support/event.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stop_token>

namespace acp::engine {

class Scheduler {
public:
  /// `connection`: the connection's thread, where the engine runs; `pool`: where file work runs.
  Scheduler(boost::asio::any_io_executor connection, boost::asio::any_io_executor pool);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const boost::asio::any_io_executor& connection() const noexcept { return connection_; }
  const boost::asio::any_io_executor& pool() const noexcept { return pool_; }
  /// A new session's strand over the pool.
  boost::asio::strand<boost::asio::any_io_executor> session_strand() const;
  /// Lock waits of sessions another writer holds (normal priority: they only sleep).
  boost::asio::any_io_executor lock_waits() const { return lock_waits_.executor(); }
  /// Reference preparation, whole-log re-reads and forks' seed reads (lowered priority).
  boost::asio::any_io_executor bulk_reads() const { return bulk_reads_.executor(); }

  /// Ends the work of no turn — replays, deletes' lock waits — now and from now on.
  void stop() { stopping_.request_stop(); }
  std::stop_token stopping() const { return stopping_.get_token(); }

  /// Runs a whole-log read (a replay, resume's model scan) on the replay threads, at most
  /// kConcurrentLogReads at once; the others wait here, on the connection thread, without polling.
  /// (`read` is copied before suspending.)
  boost::asio::awaitable<void> replay(const std::function<void()>& read);

  /// Runs store work that takes a session's write lock: tried at once on `home` (the session's
  /// strand or the pool); only when another writer holds the lock does it run again on the
  /// lock-wait threads, waiting until the lock timeout counted from now, or until `stop` (then
  /// SessionBusy). So a wait never holds a thread that appends. (Reference parameters, copied
  /// before suspending: see offload.hpp.)
  template <class R>
  boost::asio::awaitable<R> with_lock(const boost::asio::any_io_executor& home,
                                      const std::function<R(const store::LockWait&)>& work,
                                      const std::stop_token& stop);

private:
  boost::asio::any_io_executor connection_;
  boost::asio::any_io_executor pool_;
  /// Whole-log reads (replays) running: each may hold megabytes of frames back, so they are few.
  std::size_t log_reads_ = 0;
  support::Event log_read_freed_;
  std::stop_source stopping_;
  // Last members: joined before anything their jobs use is destroyed.
  support::BackgroundThreads lock_waits_;
  support::BackgroundThreads bulk_reads_;
  /// Replays (one thread per concurrent read, lowered priority).
  support::BackgroundThreads log_readers_;
};

template <class R>
boost::asio::awaitable<R> Scheduler::with_lock(const boost::asio::any_io_executor& home_in,
                                               const std::function<R(const store::LockWait&)>& work_in,
                                               const std::stop_token& stop_in) {
  const boost::asio::any_io_executor home = home_in;
  const boost::asio::any_io_executor waits = lock_waits_.executor();
  const std::function<R(const store::LockWait&)> work = work_in;
  store::LockWait wait{false, std::chrono::steady_clock::now(), stop_in};
  auto attempt = [&work, &wait]() -> std::optional<R> {
    try {
      return work(wait);
    } catch (const store::SessionBusy&) {
      return std::nullopt;
    }
  };
  std::optional<R> done = std::move(*co_await offload(home, attempt));
  if (done) co_return std::move(*done);
  wait.wait = true;
  auto waiting = [&work, &wait] { return work(wait); };
  co_return std::move(*co_await offload(waits, waiting));
}

} // namespace acp::engine
