// Cross-process exclusion for writing one session (contracts §4): an exclusive flock on a lock
// file next to the log. flock (not fcntl locks) because it belongs to the open file description:
// two writers inside one process exclude each other too, and the lock dies with its process, so
// a crashed writer never leaves a session locked.
#pragma once

#include "store/file_io.hpp"

#include <chrono>
#include <string>

namespace acp::store {

class SessionLock {
public:
  SessionLock() = default;
  SessionLock(SessionLock&&) noexcept = default;
  SessionLock& operator=(SessionLock&&) noexcept = default;
  ~SessionLock() = default;  // closing the fd releases the flock

  /// Waits in a blocking flock(LOCK_EX) for at most `timeout` (a per-thread timer signal interrupts
  /// it: no polling); throws SessionBusy(id) when it expires. Blocks the calling thread: call it off
  /// the connection thread. After locking, checks that the path still names the locked inode (a
  /// deleter may have unlinked it) and retries.
  static SessionLock acquire(const std::string& lock_path, std::chrono::milliseconds timeout, const std::string& id);

  bool held() const noexcept { return static_cast<bool>(fd_); }
  const std::string& path() const noexcept { return path_; }
  void release() noexcept { fd_.reset(); }

private:
  UniqueFd fd_;
  std::string path_;
};

} // namespace acp::store
