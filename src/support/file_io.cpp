#include "support/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace acp::support {

int write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

int pwrite_all(int fd, std::string_view data, std::uint64_t offset) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return 0;
}

IoFailure fsync_dir(int at, const char* path, int open_flags) noexcept {
  int raw;
  do {
    raw = ::openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | open_flags);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) return {"open directory", errno};
  const UniqueFd fd(raw);
  if (::fsync(fd.get()) != 0) return {"fsync", errno};
  return {};
}

bool make_dirs(const std::string& dir, mode_t mode, const DirMade& made, std::string* failed) {
  auto fail = [&](int err) {
    if (failed) *failed = dir;
    errno = err;
    return false;
  };
  if (dir.empty()) return fail(ENOENT);
  // One stat in the common case, where everything exists already.
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode) || fail(ENOTDIR);
  const std::size_t slash = dir.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  if (!make_dirs(parent, mode, made, failed)) return false;
  // EEXIST: made meanwhile by another process, which may not have made it durable yet.
  if (::mkdir(dir.c_str(), mode) != 0) {
    if (errno != EEXIST) return fail(errno);
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fail(ENOTDIR);  // a file made meanwhile
  }
  if (made) made(parent);
  return true;
}

bool make_parent_dirs(const std::string& file_path, mode_t mode) {
  const std::size_t slash = file_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  return make_dirs(file_path.substr(0, slash), mode);
}

} // namespace acp::support
