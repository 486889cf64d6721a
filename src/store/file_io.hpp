// Thin POSIX helpers for the store: every open of a log goes through O_NOFOLLOW so a symlink
// planted inside the root never redirects a read or write outside it, and every error carries
// the path and errno text.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace acp::store {

/// Owns a file descriptor.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  void reset() noexcept;

private:
  int fd_ = -1;
};

/// StoreError with "<what> <path>: <strerror(err)>".
[[noreturn]] void throw_errno(std::string_view what, const std::string& path, int err);

/// Opens with O_CLOEXEC|O_NOFOLLOW; returns an empty fd (errno kept) on failure.
UniqueFd open_nofollow(const std::string& path, int flags, mode_t mode = 0600);

/// Reads exactly [offset, offset+n) or fewer bytes at EOF.
std::string pread_some(int fd, std::uint64_t offset, std::size_t n, const std::string& path);
/// The same into `buf` (resized to the bytes read), reusing its capacity: a streaming reader
/// calls it per chunk without allocating and zero-filling a new buffer each time.
void pread_into(int fd, std::uint64_t offset, std::size_t n, std::string& buf, const std::string& path);

/// Writes all bytes at the current offset; throws on failure.
void write_all(int fd, std::string_view data, const std::string& path);

/// Writes all bytes at `offset`; throws on failure.
void pwrite_all(int fd, std::string_view data, std::uint64_t offset, const std::string& path);

void fsync_fd(int fd, const std::string& path);

/// fsync of a directory, so a link()/unlink() in it is durable.
void fsync_dir(const std::string& dir);

/// Creates the directory with mode 0700 if missing. Throws if the path exists and is not a real
/// directory (a symlink included). Returns true when it was created.
bool ensure_private_dir(const std::string& dir);

/// Calls fn(name, dirfd) for every entry but "." and ".." (no symlink followed to open `dir`).
/// Returns false when the directory cannot be opened. `dirfd` allows fstatat() without path walks.
bool for_each_dir_entry(const std::string& dir, const std::function<void(std::string_view name, int dirfd)>& fn);

/// lstat(); false when missing.
bool lstat_path(const std::string& path, struct stat& st);

/// st_mtim as nanoseconds.
std::int64_t mtime_ns(const struct stat& st);

/// Wall clock in Unix milliseconds.
std::int64_t now_ms();

/// 12 random lowercase hex characters (tmp-file names).
std::string random_hex12();

} // namespace acp::store
