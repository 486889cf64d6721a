// Thin POSIX helpers for the store: every open of a log goes through O_NOFOLLOW so a symlink
// planted inside the root never redirects a read or write outside it, and every error carries
// the path and errno text.
#pragma once

#include "support/unique_fd.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace acp::store {

using support::UniqueFd;

/// StoreError with "<what> <path>: <strerror(err)>".
[[noreturn]] void throw_errno(std::string_view what, const std::string& path, int err);

/// Opens with O_CLOEXEC|O_NOFOLLOW; returns an empty fd (errno kept) on failure.
UniqueFd open_nofollow(const std::string& path, int flags, mode_t mode = 0600);

/// Reads exactly [offset, offset+n) or fewer bytes at EOF.
std::string pread_some(int fd, std::uint64_t offset, std::size_t n, const std::string& path);

/// A buffer a streaming reader reads its chunks into: allocated once, never zero-filled, sized to
/// what the file can still deliver, so a small log neither allocates nor touches a whole chunk.
/// (A std::string grown chunk by chunk zero-filled and copied every byte before pread wrote it:
/// a third of the CPU of referencing a 1 MB log.)
class ReadBuffer {
public:
  /// Reads [offset, offset+n), fewer bytes only at end of file. `expected_end` is where the file
  /// is believed to end (its size when opened); the buffer is sized by it, not by `n`, and grows
  /// if the file turns out longer. The bytes stay valid until the next read.
  std::string_view read(int fd, std::uint64_t offset, std::size_t n, std::uint64_t expected_end,
                        const std::string& path);

private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
};

/// Writes all bytes at the current offset (support::write_all); throws on failure.
void write_all(int fd, std::string_view data, const std::string& path);

/// Writes all bytes at `offset`; throws on failure.
void pwrite_all(int fd, std::string_view data, std::uint64_t offset, const std::string& path);

void fsync_fd(int fd, const std::string& path);

/// fsync of a directory, so a link()/unlink() in it is durable.
void fsync_dir(const std::string& dir);

/// mkdir -p (support::make_dirs) that follows symlinks (the harness home may be one), 0700 for what
/// it creates, and fsyncs each parent whose entry it made, so a path below survives a crash.
/// Throws "not a directory: <level>" when something else is in the way.
void make_durable_dirs(const std::string& dir);

/// Creates the directory with mode 0700 if missing. Throws if the path exists and is not a real
/// directory (a symlink included). Returns true when it was created.
bool ensure_private_dir(const std::string& dir);

/// Calls fn(name, dirfd) for every entry but "." and ".." (no symlink followed to open `dir`).
/// Returns false when the directory cannot be opened. `dirfd` allows fstatat() without path walks.
bool for_each_dir_entry(const std::string& dir, const std::function<void(std::string_view name, int dirfd)>& fn);

/// The same, with the entry's type as readdir reports it (DT_REG, DT_DIR, DT_LNK, …; DT_UNKNOWN
/// on file systems that do not fill d_type: the caller stats then).
bool for_each_dir_entry_typed(const std::string& dir,
                              const std::function<void(std::string_view name, int dirfd, unsigned char type)>& fn);

/// lstat(); false when missing.
bool lstat_path(const std::string& path, struct stat& st);

/// st_mtim as nanoseconds.
std::int64_t mtime_ns(const struct stat& st);

/// Wall clock in Unix milliseconds.
std::int64_t now_ms();

/// 12 random lowercase hex characters (tmp-file names).
std::string random_hex12();

} // namespace acp::store
