#include "paths.hpp"

#include <cerrno>
#include <sys/stat.h>

namespace acp::support {

bool make_dirs(const std::string& dir, mode_t mode) {
  if (dir.empty()) return false;
  for (std::size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool is_absolute_path(std::string_view path) { return !path.empty() && path.front() == '/'; }

bool make_parent_dirs(const std::string& file_path, mode_t mode) {
  auto slash = file_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  return make_dirs(file_path.substr(0, slash), mode);
}

} // namespace acp::support
