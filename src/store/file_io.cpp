#include "store/file_io.hpp"

#include "store/errors.hpp"
#include "support/hex.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace acp::store {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() { reset(); }

int UniqueFd::release() noexcept {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void throw_errno(std::string_view what, const std::string& path, int err) {
  throw StoreError(std::string(what) + " " + path + ": " + std::strerror(err));
}

UniqueFd open_nofollow(const std::string& path, int flags, mode_t mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
  } while (fd < 0 && errno == EINTR);
  return UniqueFd(fd);
}

std::string pread_some(int fd, std::uint64_t offset, std::size_t n, const std::string& path) {
  std::string out;
  pread_into(fd, offset, n, out, path);
  return out;
}

void pread_into(int fd, std::uint64_t offset, std::size_t n, std::string& out, const std::string& path) {
  // The buffer grows as bytes arrive: the log reader asks for 1 MiB at a time, and zero-filling
  // that for every small log (and the final empty read) cost more than reading it. A reused buffer
  // only zero-fills what grows beyond its previous size.
  constexpr std::size_t kFirst = 64 * 1024;
  out.resize(std::min(n, std::max(kFirst, out.size())));
  std::size_t got = 0;
  while (got < n) {
    if (got == out.size()) out.resize(std::min(n, out.size() * 2));
    ssize_t r = ::pread(fd, out.data() + got, out.size() - got, off_t(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("read", path, errno);
    }
    if (r == 0) break;
    got += std::size_t(r);
  }
  out.resize(got);
}

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t r = ::write(fd, data.data(), data.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", path, errno);
    }
    data.remove_prefix(std::size_t(r));
  }
}

void pwrite_all(int fd, std::string_view data, std::uint64_t offset, const std::string& path) {
  while (!data.empty()) {
    ssize_t r = ::pwrite(fd, data.data(), data.size(), off_t(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", path, errno);
    }
    data.remove_prefix(std::size_t(r));
    offset += std::uint64_t(r);
  }
}

void fsync_fd(int fd, const std::string& path) {
  if (::fsync(fd) != 0) throw_errno("fsync", path, errno);
}

void fsync_dir(const std::string& dir) {
  UniqueFd fd = open_nofollow(dir, O_RDONLY | O_DIRECTORY);
  if (!fd) throw_errno("open directory", dir, errno);
  fsync_fd(fd.get(), dir);
}

bool ensure_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) return true;
  int err = errno;
  if (err != EEXIST) throw_errno("mkdir", dir, err);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw_errno("stat", dir, errno);
  if (!S_ISDIR(st.st_mode)) throw StoreError("not a directory (symlinks are not followed): " + dir);
  return false;
}

bool for_each_dir_entry(const std::string& dir, const std::function<void(std::string_view name, int dirfd)>& fn) {
  UniqueFd fd = open_nofollow(dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return false;
  DIR* d = ::fdopendir(fd.get());
  if (!d) return false;
  fd.release();
  const int dfd = ::dirfd(d);
  try {
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") fn(n, dfd);
    }
  } catch (...) {
    ::closedir(d);
    throw;
  }
  ::closedir(d);
  return true;
}

bool lstat_path(const std::string& path, struct stat& st) {
  if (::lstat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw_errno("stat", path, errno);
}

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string random_hex12() {
  unsigned char bytes[6];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t r = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom", "", errno);
    }
    got += std::size_t(r);
  }
  return support::hex_encode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

} // namespace acp::store
