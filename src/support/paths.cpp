#include "paths.hpp"

#include <filesystem>
#include <sys/stat.h>

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

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool same_path(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ec;
  auto norm = [&](const std::string& p) {
    std::string s = std::filesystem::absolute(p, ec).lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  return norm(a) == norm(b);
}

} // namespace acp::support
