// The kernel's part of confinement: openat2 with RESOLVE_BENEATH, and reading back where a
// descriptor points. Roots (roots.hpp) builds the tools' path handling on these.
#pragma once

#include <optional>
#include <string>

namespace acp::tools {

/// Whether openat2 resolves beneath `dir_fd` on this kernel (false: ENOSYS, or a filter refusing it).
bool kernel_resolves_beneath(int dir_fd);

/// openat2(dir_fd, relative, flags | O_CLOEXEC) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
/// retried while a concurrent rename makes the kernel answer EAGAIN. The descriptor, or -1 with errno
/// (EXDEV: the path, a `..` or a symbolic link on it, leads out from under `dir_fd`).
int open_beneath(int dir_fd, const std::string& relative, int flags);

/// Where `fd` points now (/proc/self/fd), or nullopt where /proc is not mounted.
std::optional<std::string> descriptor_path(int fd);

/// The text of the symbolic link `link_fd` (opened O_PATH | O_NOFOLLOW) holds, or nullopt with errno.
std::optional<std::string> link_text(int link_fd);

} // namespace acp::tools
