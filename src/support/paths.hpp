// Small path predicates (mkdir -p is in support/file_io.hpp).
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace acp::support {

/// Whether `path` is absolute (starts with '/'): cwd and directory fields must be.
bool is_absolute_path(std::string_view path);

/// Whether `path` names an existing directory (symlinks followed).
bool is_directory(const std::string& path);

/// Whether two paths name the same place: the same inode when both exist, else the same
/// absolute, lexically normal text.
bool same_path(const std::string& a, const std::string& b);

} // namespace acp::support
