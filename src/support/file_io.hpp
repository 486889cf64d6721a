// The one set of low-level file I/O every layer shares: whole writes, a directory's fsync and
// mkdir -p. Each reports the errno it met instead of throwing, so the store, the tools and the
// key file each word the error in their own terms (StoreError, ToolFailure, system_error) while
// the retry on EINTR and short writes is written once. The owned descriptor is UniqueFd
// (support/unique_fd.hpp). What stays elsewhere is genuinely different: the tools' confined
// component walk (src/tools/component_walk.cpp) creates a directory only relative to a
// descriptor inside a root, never by path.
#pragma once

#include "support/unique_fd.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace acp::support {

/// Writes all of `data` at the file's offset, through EINTR and short writes. Returns 0, or the
/// errno of the write that failed (what was written before it stays written).
int write_all(int fd, std::string_view data) noexcept;

/// The same at `offset` (pwrite): the file's own offset does not move.
int pwrite_all(int fd, std::string_view data, std::uint64_t offset) noexcept;

/// The step of a multi-step call that failed, and its errno; error 0 is success.
struct IoFailure {
  const char* what = "";  ///< "open directory" or "fsync"
  int error = 0;
  explicit operator bool() const noexcept { return error != 0; }
};

/// fsync of the directory `path` names relative to `at` (AT_FDCWD: a plain path), so an entry
/// made, renamed or removed in it survives a crash. `open_flags` join O_RDONLY | O_DIRECTORY |
/// O_CLOEXEC (the store adds O_NOFOLLOW). A descriptor opened O_PATH cannot be fsynced itself:
/// pass it as `at` with path ".".
IoFailure fsync_dir(int at, const char* path, int open_flags = 0) noexcept;

/// Called with the parent of each directory make_dirs creates, once the entry is made.
using DirMade = std::function<void(const std::string& parent)>;

/// mkdir -p: creates `dir` and every missing directory above it with `mode`, following symbolic
/// links (a home directory may be one). An existing directory is success; `made`, when set, runs
/// for each level created, or found made meanwhile by another process (a durable caller fsyncs
/// the parent there; what it throws propagates).
/// Returns false with errno set on failure, ENOTDIR when something other than a directory is in
/// the way; `failed`, when given, is set to the level that could not be made. "" is ENOENT.
bool make_dirs(const std::string& dir, mode_t mode, const DirMade& made = {}, std::string* failed = nullptr);

/// make_dirs for the directory above `file_path` ("a/b/file" makes "a/b"); nothing for a file
/// in "/" or in the working directory.
bool make_parent_dirs(const std::string& file_path, mode_t mode);

} // namespace acp::support
