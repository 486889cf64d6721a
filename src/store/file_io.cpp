#include "store/file_io.hpp"

#include "store/errors.hpp"
#include "support/file_io.hpp"
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

namespace {

// Reads until `n` bytes or end of file; returns the count.
std::size_t pread_full(int fd, std::uint64_t offset, char* out, std::size_t n, const std::string& path) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, out + got, n - got, off_t(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("read", path, errno);
    }
    if (r == 0) break;
    got += std::size_t(r);
  }
  return got;
}

} // namespace

std::string pread_some(int fd, std::uint64_t offset, std::size_t n, const std::string& path) {
  std::string out(n, '\0');
  out.resize(pread_full(fd, offset, out.data(), n, path));
  return out;
}

std::string_view ReadBuffer::read(int fd, std::uint64_t offset, std::size_t n, std::uint64_t expected_end,
                                  const std::string& path) {
  // One byte past the expected end, so a file that grew is noticed without another read.
  const std::uint64_t left = expected_end > offset ? expected_end - offset : 0;
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, left + 1));
  if (want > capacity_) {
    // The file may grow while it is read: then later chunks take the full `n`.
    const std::size_t size = std::max(want, std::min(n, capacity_ * 2));
    data_ = std::make_unique_for_overwrite<char[]>(size);
    capacity_ = size;
  }
  std::size_t got = pread_full(fd, offset, data_.get(), want, path);
  if (got == want && want < n) {  // longer than expected: read on, up to n
    if (n > capacity_) {
      auto bigger = std::make_unique_for_overwrite<char[]>(n);
      std::memcpy(bigger.get(), data_.get(), got);
      data_ = std::move(bigger);
      capacity_ = n;
    }
    got += pread_full(fd, offset + got, data_.get() + got, n - got, path);
  }
  return {data_.get(), got};
}

void write_all(int fd, std::string_view data, const std::string& path) {
  if (const int err = support::write_all(fd, data)) throw_errno("write", path, err);
}

void pwrite_all(int fd, std::string_view data, std::uint64_t offset, const std::string& path) {
  if (const int err = support::pwrite_all(fd, data, offset)) throw_errno("write", path, err);
}

void fsync_fd(int fd, const std::string& path) {
  if (::fsync(fd) != 0) throw_errno("fsync", path, errno);
}

void fsync_dir(const std::string& dir) {
  if (const support::IoFailure f = support::fsync_dir(AT_FDCWD, dir.c_str(), O_NOFOLLOW)) throw_errno(f.what, dir, f.error);
}

void make_durable_dirs(const std::string& dir) {
  std::string failed;
  if (support::make_dirs(dir, 0700, [](const std::string& parent) { fsync_dir(parent); }, &failed)) return;
  if (errno == ENOTDIR) throw StoreError("not a directory: " + failed);
  throw_errno("mkdir", failed, errno);
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
  return for_each_dir_entry_typed(dir, [&](std::string_view n, int dfd, unsigned char) { fn(n, dfd); });
}

bool for_each_dir_entry_typed(const std::string& dir,
                              const std::function<void(std::string_view name, int dirfd, unsigned char type)>& fn) {
  UniqueFd fd = open_nofollow(dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return false;
  DIR* d = ::fdopendir(fd.get());
  if (!d) return false;
  fd.release();
  const int dfd = ::dirfd(d);
  try {
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") fn(n, dfd, e->d_type);
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
