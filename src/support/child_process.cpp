#include "support/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace acp::support {

namespace {

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  int take_read() { return std::exchange(read, -1); }
  int take_write() { return std::exchange(write, -1); }
};

} // namespace

std::vector<std::string> child_environment(const std::vector<std::string>& hidden,
                                           const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  auto hide = [&](std::string_view name) {
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
  Pipe out;
  std::optional<Pipe> in, err;
  if (spec.stdin_pipe) in.emplace();
  if (spec.stderr_pipe) err.emplace();

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in) posix_spawn_file_actions_adddup2(&actions, in->read, 0);
  else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err ? err->write : out.write, 2);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // The server ignores SIGPIPE; a child must not inherit that.
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> argv_s = spec.argv, env_s = spec.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start " + spec.argv[0]);

  SpawnedProcess p;
  p.pid = pid;
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (p.pidfd < 0) {
    int e = errno;
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw std::system_error(e, std::generic_category(), "cannot watch " + spec.argv[0] + " (pidfd_open)");
  }
  p.stdout_fd = out.take_read();
  if (in) p.stdin_fd = in->take_write();
  if (err) p.stderr_fd = err->take_read();
  return p;
}

} // namespace acp::support
