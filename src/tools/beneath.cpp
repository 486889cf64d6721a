#include "tools/beneath.hpp"

#include "support/unique_fd.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace acp::tools {

namespace {

constexpr unsigned long long kBeneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

int raw_openat2(int dir_fd, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.resolve = kBeneath;
  return static_cast<int>(::syscall(SYS_openat2, dir_fd, path, &how, sizeof how));
}

} // namespace

bool kernel_resolves_beneath(int dir_fd) {
  // False on ENOSYS (before Linux 5.6), or EPERM from a seccomp filter.
  return static_cast<bool>(support::UniqueFd(raw_openat2(dir_fd, ".", O_PATH | O_DIRECTORY)));
}

int open_beneath(int dir_fd, const std::string& relative, int flags) {
  // EAGAIN: a rename anywhere on the system raced a `..` step; the kernel asks for a retry. Bounded,
  // so a rename storm ends in the component walk instead of spinning here.
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = raw_openat2(dir_fd, relative.c_str(), flags);
    if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) return fd;
  }
  return -1;
}

std::optional<std::string> descriptor_path(int fd) {
  char link[32];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[PATH_MAX];
  ssize_t n = ::readlink(link, buf, sizeof buf);
  if (n <= 0 || std::size_t(n) == sizeof buf || buf[0] != '/') return std::nullopt;
  return std::string(buf, std::size_t(n));
}

std::optional<std::string> link_text(int link_fd) {
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(link_fd, "", buf, sizeof buf);
  if (n < 0) return std::nullopt;
  if (std::size_t(n) == sizeof buf) {
    errno = ENAMETOOLONG;
    return std::nullopt;
  }
  return std::string(buf, std::size_t(n));
}

} // namespace acp::tools
