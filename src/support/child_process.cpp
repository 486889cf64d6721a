#include "support/child_process.hpp"

#include "support/secrets.hpp"
#include "support/unique_fd.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sched.h>
#include <system_error>

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// glibc's clone under its other exported name. ThreadSanitizer intercepts `clone` and treats a child
// without CLONE_THREAD as a fork: in a CLONE_VM child that bookkeeping runs in our own memory, marks
// the server as "forked while multi-threaded" and makes its next thread start abort (and corrupts
// its race detection). The child never runs instrumented code, so the interceptor has nothing to do.
extern "C" int __clone(int (*fn)(void*), void* stack, int flags, void* arg, ...);

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace acp::support {

namespace {

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    read = UniqueFd(fds[0]);
    write = UniqueFd(fds[1]);
  }
};

// The processes spawn_process started and has not reaped. Held across the clone that starts one,
// each reap of ours, and the sweep that lists our children: so a child we list as unknown is an
// orphan, and an orphan's pid cannot be reused while we hold the lock (only we reap it).
std::mutex registry_mutex;
std::vector<pid_t> started;
// Children we had before we became a subreaper: a launcher may fork a helper and then exec us, and
// that helper is ours by inheritance, not by anything we started. The sweeps leave them alone (they
// stay unreaped zombies at worst, so their pids are never reused while listed here).
std::vector<pid_t> inherited;
std::atomic<bool> adopting{false};

void forget(pid_t pid) {
  if (auto it = std::find(started.begin(), started.end(), pid); it != started.end()) started.erase(it);
}

// Our children, from every thread's /proc children list (an orphan goes to any live thread).
std::vector<pid_t> our_children() {
  std::vector<pid_t> out;
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return out;
  while (const dirent* t = ::readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream list(std::string("/proc/self/task/") + t->d_name + "/children");
    for (long pid; list >> pid;) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(tasks);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool listed(const std::vector<pid_t>& pids, pid_t pid) { return std::find(pids.begin(), pids.end(), pid) != pids.end(); }

std::vector<pid_t> orphans_locked() {
  std::vector<pid_t> out;
  for (pid_t pid : our_children())
    if (!listed(started, pid) && !listed(inherited, pid)) out.push_back(pid);
  return out;
}

// The program's path as execvp would find it on our PATH (a name with a '/' is taken as it is).
std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (;;) {
    std::size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

// What the child needs between clone and exec; it shares our memory (CLONE_VM) while we wait
// (CLONE_VFORK), and reports a failed step here.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;  ///< nullptr: ours
  int stdin_fd;     ///< -1: /dev/null
  int stdout_fd;
  int stderr_fd;
  int landlock_ruleset;
  pid_t parent;
  int error = 0;
  const char* failed_step = nullptr;
};

// The child runs on a borrowed stack in our address space: raw system calls only (no allocation,
// no locks, nothing a sanitizer intercepts), and exit_group instead of exit.
#define DSH_CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))

[[noreturn]] DSH_CHILD_CODE void child_fail(ChildPlan* plan, const char* step) {
  plan->error = errno;
  plan->failed_step = step;
  ::syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// `from` becomes descriptor `to`, inherited across exec.
DSH_CHILD_CODE bool move_fd(int from, int to) {
  if (from == to) return ::syscall(SYS_fcntl, to, F_SETFD, 0) == 0;
  return ::syscall(SYS_dup3, from, to, 0) == to;
}

DSH_CHILD_CODE int child_main(void* arg) {
  auto* plan = static_cast<ChildPlan*>(arg);
  // Default dispositions: our handlers (asio's signal pipe) must not run here, nor our SIGPIPE
  // SIG_IGN reach the program. An all-zero kernel sigaction is SIG_DFL in every layout.
  unsigned long zero_action[8] = {};
  for (int sig = 1; sig < 65; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::syscall(SYS_rt_sigaction, sig, zero_action, nullptr, 8);
  if (::syscall(SYS_setpgid, 0, 0) != 0) child_fail(plan, "setpgid");
  // The thread that started us ends only at our exit: then so do we (a kill -9 of the server).
  if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(plan, "PR_SET_PDEATHSIG");
  if (::syscall(SYS_getppid) != plan->parent) child_fail(plan, "parent gone");
  if (::syscall(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) child_fail(plan, "PR_SET_CHILD_SUBREAPER");
  if (plan->stdin_fd >= 0) {
    if (!move_fd(plan->stdin_fd, 0)) child_fail(plan, "stdin");
  } else {
    long null = ::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || !move_fd(static_cast<int>(null), 0)) child_fail(plan, "/dev/null");
  }
  if (!move_fd(plan->stdout_fd, 1) || !move_fd(plan->stderr_fd, 2)) child_fail(plan, "stdout");
  if (plan->cwd && ::syscall(SYS_chdir, plan->cwd) != 0) child_fail(plan, "chdir");
  if (plan->landlock_ruleset >= 0) {
    if (::syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail(plan, "PR_SET_NO_NEW_PRIVS");
    if (::syscall(SYS_landlock_restrict_self, plan->landlock_ruleset, 0) != 0) child_fail(plan, "Landlock");
  }
  // Not every descriptor of ours is close-on-exec (Asio opens sockets without it): a command must
  // not inherit another session's model connection or a store's socket. Our descriptor table is
  // the child's own copy (no CLONE_FILES), so closing here touches nothing of ours (the Landlock ruleset
  // is no longer needed: the domain is in force).
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    long limit = 1024;
    struct rlimit rl;
    if (::syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 20))
      limit = static_cast<long>(rl.rlim_cur);
    for (long fd = 3; fd < limit; ++fd) ::syscall(SYS_close, fd);
  }
  unsigned long no_signals = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, nullptr, 8);
  ::syscall(SYS_execve, plan->path, plan->argv, plan->envp);
  child_fail(plan, "exec");
}

} // namespace

std::vector<std::string> child_environment(const std::vector<std::string>& hidden,
                                           const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  auto hide = [&](std::string_view name) {
    if (is_secret_variable(name)) return true;
    for (const auto& h : hidden)
      if (name == h) return true;
    for (const auto& [n, v] : extra)
      if (name == n) return true;
    return false;
  };
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    if (!hide(entry.substr(0, entry.find('=')))) env.emplace_back(entry);
  }
  for (const auto& [n, v] : extra) env.push_back(n + "=" + v);
  return env;
}

SpawnedProcess spawn_process(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "spawn: no program");
  std::optional<std::string> path = find_program(spec.argv[0]);
  if (!path) throw std::system_error(ENOENT, std::generic_category(), "cannot start " + spec.argv[0]);
  Pipe out;
  std::optional<Pipe> in, err;
  if (spec.stdin_pipe) in.emplace();
  if (spec.stderr_pipe) err.emplace();

  std::vector<std::string> argv_s = spec.argv, env_s = spec.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  ChildPlan plan{path->c_str(), argv.data(), envp.data(), spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                 in ? in->read.get() : -1, out.write.get(), err ? err->write.get() : out.write.get(),
                 spec.landlock_ruleset, ::getpid()};
  // The child borrows this stack while we are suspended (CLONE_VFORK), as posix_spawn does; no
  // signal handler of ours may run on it, so every signal stays blocked until it has exec'd.
  alignas(64) char child_stack[32 * 1024];
  sigset_t all, old;
  sigfillset(&all);
  int pidfd = -1;
  pid_t pid;
  {
    std::lock_guard lock(registry_mutex);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = ::__clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD,
                  &plan, &pidfd);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (pid > 0 && !plan.error) started.push_back(pid);
  }
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "cannot start " + spec.argv[0]);
  if (plan.error) {
    // It exited before exec: already a zombie.
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) ::close(pidfd);
    throw std::system_error(plan.error, std::generic_category(),
                            "cannot start " + spec.argv[0] + " (" + plan.failed_step + ")");
  }
  SpawnedProcess p;
  p.pid = pid;
  p.pidfd = pidfd;
  p.stdout_fd = out.read.release();
  if (in) p.stdin_fd = in->write.release();
  if (err) p.stderr_fd = err->read.release();
  return p;
}

bool reap_process(pid_t pid, int& status) {
  std::lock_guard lock(registry_mutex);
  pid_t r;
  do r = ::waitpid(pid, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r != pid && !(r < 0 && errno == ECHILD)) return false;
  forget(pid);
  return r == pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard lock(registry_mutex);
  forget(pid);
}

bool adopt_orphans() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return false;
  {
    std::lock_guard lock(registry_mutex);
    for (pid_t pid : our_children())
      if (!listed(started, pid) && !listed(inherited, pid)) inherited.push_back(pid);
  }
  adopting = true;
  return true;
}

boost::asio::awaitable<void> kill_orphans() {
  namespace asio = boost::asio;
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  if (!adopting) co_return;
  auto ex = co_await asio::this_coro::executor;
  for (;;) {
    // SIGKILLed through a pidfd, awaited through it, reaped by it: never by a pid that could have
    // been reused.
    std::vector<asio::posix::stream_descriptor> victims;
    {
      std::lock_guard lock(registry_mutex);
      for (pid_t pid : orphans_locked()) {
        int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (fd < 0) continue;
        ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
        victims.emplace_back(ex, fd);
      }
    }
    if (victims.empty()) co_return;
    for (auto& v : victims) {
      boost::system::error_code ec;
      co_await v.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
      std::lock_guard lock(registry_mutex);
      siginfo_t info;
      ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(v.native_handle()), &info, WEXITED | WNOHANG);
    }
  }
}

void kill_all_children() {
  if (!adopting) return;
  std::lock_guard lock(registry_mutex);
  for (;;) {
    std::vector<pid_t> children;
    for (pid_t pid : our_children())
      if (!listed(inherited, pid)) children.push_back(pid);
    if (children.empty()) return;
    for (pid_t pid : children) ::kill(pid, SIGKILL);
    for (pid_t pid : children) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      forget(pid);
    }
  }
}

} // namespace acp::support
