#include "store/session_lock.hpp"

#include "store/errors.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

namespace acp::store {

SessionLock SessionLock::acquire(const std::string& lock_path, std::chrono::milliseconds timeout,
                                 const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    UniqueFd fd = open_nofollow(lock_path, O_RDWR | O_CREAT, 0600);
    if (!fd) throw_errno("open lock file", lock_path, errno);
    for (;;) {
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) break;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) throw_errno("flock", lock_path, errno);
      if (std::chrono::steady_clock::now() >= deadline) throw SessionBusy(id);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    struct stat held {}, named {};
    if (::fstat(fd.get(), &held) != 0) throw_errno("stat", lock_path, errno);
    if (::lstat(lock_path.c_str(), &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev) {
      SessionLock lock;
      lock.fd_ = std::move(fd);
      lock.path_ = lock_path;
      return lock;
    }
    // The file we locked was unlinked by a deleter: lock the current one instead.
    if (std::chrono::steady_clock::now() >= deadline) throw SessionBusy(id);
  }
}

} // namespace acp::store
