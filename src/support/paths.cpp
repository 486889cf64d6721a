#include "paths.hpp"

#include <filesystem>
#include <sys/stat.h>

namespace acp::support {

bool is_absolute_path(std::string_view path) { return !path.empty() && path.front() == '/'; }

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
