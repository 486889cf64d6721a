// Cross-process exclusion for writing one session (docs/store-format.md#locks): an exclusive flock on a lock
// file next to the log. flock (not fcntl locks) because it belongs to the open file description:
// two writers inside one process exclude each other too, and the lock dies with its process, so
// a crashed writer never leaves a session locked.
#pragma once

#include "store/file_io.hpp"

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

namespace acp::store {

/// How a writer waits for a session's lock held by another writer.
struct LockWait {
  bool wait = true;  ///< false: SessionBusy at once (a caller that waits elsewhere if it must)
  /// The timeout counts from here (default: when the wait starts): a wait queued behind others
  /// still ends at its deadline.
  std::optional<std::chrono::steady_clock::time_point> since;
  std::stop_token stop;  ///< ends the wait early, with SessionBusy (a cancel, the shutdown)
};

class SessionLock {
public:
  SessionLock() = default;
  SessionLock(SessionLock&&) noexcept = default;
  SessionLock& operator=(SessionLock&&) noexcept = default;
  ~SessionLock() = default;  // closing the fd releases the flock

  /// Waits in a blocking flock(LOCK_EX) for at most `timeout` after `wait.since` (a per-thread timer
  /// signal interrupts it: no polling), or until `wait.stop`; throws SessionBusy(id) when it gives
  /// up. Blocks the calling thread: call it off the connection thread. After locking, checks that
  /// the path still names the locked inode (a deleter may have unlinked it) and retries.
  static SessionLock acquire(const std::string& lock_path, std::chrono::milliseconds timeout, const std::string& id,
                             const LockWait& wait = {});

  bool held() const noexcept { return static_cast<bool>(fd_); }
  const std::string& path() const noexcept { return path_; }
  void release() noexcept { fd_.reset(); }

private:
  UniqueFd fd_;
  std::string path_;
};

} // namespace acp::store
