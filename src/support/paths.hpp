// Small filesystem helpers for the XDG directories we create.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace acp::support {

/// Creates every missing directory above `file_path` with `mode`. Returns false on failure.
bool make_parent_dirs(const std::string& file_path, mode_t mode);

/// Creates `dir` and every missing parent with `mode` (mkdir -p). Returns false on failure.
bool make_dirs(const std::string& dir, mode_t mode);

/// Whether `path` is absolute (starts with '/'): cwd and directory fields must be.
bool is_absolute_path(std::string_view path);

/// Whether `path` names an existing directory (symlinks followed).
bool is_directory(const std::string& path);

/// Whether two paths name the same place: the same inode when both exist, else the same
/// absolute, lexically normal text.
bool same_path(const std::string& a, const std::string& b);

} // namespace acp::support
