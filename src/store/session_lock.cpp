#include "store/session_lock.hpp"

#include "store/errors.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <ctime>
#include <unistd.h>

namespace acp::store {

namespace {

// Its only job is to interrupt a blocking flock() with EINTR (installed without SA_RESTART).
void interrupt_lock_wait(int) {}

int lock_timeout_signal() {
  static const int signo = [] {
    int s = SIGRTMIN + 2;
    struct sigaction sa {};
    sa.sa_handler = interrupt_lock_wait;
    sigemptyset(&sa.sa_mask);
    ::sigaction(s, &sa, nullptr);
    return s;
  }();
  return signo;
}

// A timer that signals this thread at the deadline (or at once, when stopped) and every 20 ms
// after it, so a signal that lands just before flock() starts waiting cannot leave it blocked.
class DeadlineSignal {
public:
  explicit DeadlineSignal(std::chrono::steady_clock::time_point deadline) {
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = lock_timeout_signal();
    ev._sigev_un._tid = static_cast<pid_t>(::gettid());
    if (::timer_create(CLOCK_MONOTONIC, &ev, &timer_) != 0) throw_errno("timer_create", "lock wait", errno);
    auto left = std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(1));
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
    spec.it_interval.tv_nsec = kRepeatNs;
    ::timer_settime(timer_, 0, &spec, nullptr);
  }
  /// Signals now (and every 20 ms after): safe from any thread (the timer is the process's).
  void fire_now() noexcept {
    itimerspec spec{};
    spec.it_value.tv_nsec = 1;
    spec.it_interval.tv_nsec = kRepeatNs;
    ::timer_settime(timer_, 0, &spec, nullptr);
  }
  ~DeadlineSignal() { ::timer_delete(timer_); }
  DeadlineSignal(const DeadlineSignal&) = delete;
  DeadlineSignal& operator=(const DeadlineSignal&) = delete;

private:
  static constexpr long kRepeatNs = 20 * 1000000;
  timer_t timer_{};
};

// True once `fd` is locked; false when the deadline passed or a stop was requested first.
bool lock_before(int fd, std::chrono::steady_clock::time_point deadline, const std::stop_token& stop,
                 const std::string& lock_path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
  if (errno != EWOULDBLOCK && errno != EINTR) throw_errno("flock", lock_path, errno);
  if (std::chrono::steady_clock::now() >= deadline || stop.stop_requested()) return false;
  DeadlineSignal alarm(deadline);
  // Destroyed before the alarm: a callback running on another thread is waited for.
  std::stop_callback on_stop(stop, [&alarm] { alarm.fire_now(); });
  for (;;) {
    if (::flock(fd, LOCK_EX) == 0) return true;
    if (errno != EINTR) throw_errno("flock", lock_path, errno);
    if (std::chrono::steady_clock::now() >= deadline || stop.stop_requested()) return false;
  }
}

} // namespace

SessionLock SessionLock::acquire(const std::string& lock_path, std::chrono::milliseconds timeout, const std::string& id,
                                 const LockWait& wait) {
  const auto deadline = wait.wait ? wait.since.value_or(std::chrono::steady_clock::now()) + timeout
                                  : std::chrono::steady_clock::time_point::min();
  for (;;) {
    UniqueFd fd = open_nofollow(lock_path, O_RDWR | O_CREAT, 0600);
    if (!fd) throw_errno("open lock file", lock_path, errno);
    if (!lock_before(fd.get(), deadline, wait.stop, lock_path)) throw SessionBusy(id);
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
