#include "tools/roots.hpp"

#include "tools/tool_failure.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <sys/stat.h>

namespace acp::tools {

namespace {

std::string canonical_dir(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') throw std::invalid_argument("\"" + dir + "\" is not an absolute path");
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(dir.c_str(), nullptr), &std::free);
  if (!real) throw std::invalid_argument("\"" + dir + "\": " + std::strerror(errno));
  struct stat st {};
  if (::stat(real.get(), &st) != 0 || !S_ISDIR(st.st_mode)) throw std::invalid_argument("\"" + dir + "\" is not a directory");
  return real.get();
}

std::string join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string parent(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

} // namespace

Roots::Roots(const std::string& cwd, const std::vector<std::string>& additional) {
  dirs_.push_back(canonical_dir(cwd));
  for (const auto& d : additional) dirs_.push_back(canonical_dir(d));
}

bool Roots::contains(std::string_view path) const {
  for (const auto& root : dirs_) {
    if (root == "/") return true;
    if (path.size() >= root.size() && path.substr(0, root.size()) == root &&
        (path.size() == root.size() || path[root.size()] == '/'))
      return true;
  }
  return false;
}

std::string Roots::display(std::string_view path) const {
  for (const auto& root : dirs_) {
    if (path == root) return ".";
    if (root != "/" && path.size() > root.size() && path.substr(0, root.size()) == root && path[root.size()] == '/')
      return std::string(path.substr(root.size() + 1));
  }
  return std::string(path);
}

ResolvedPath Roots::resolve(std::string_view path) const {
  if (path.empty()) throw ToolFailure("the path is empty");
  if (path.find('\0') != std::string_view::npos) throw ToolFailure("the path holds a NUL character");
  if (path.size() > PATH_MAX) throw ToolFailure("the path is longer than " + std::to_string(PATH_MAX) + " bytes");
  std::string whole = path.front() == '/' ? std::string(path) : join(cwd(), path);
  // Walk the components: while they exist, `cur` stays canonical (a link is replaced by its
  // canonical target); once one is missing, the rest is appended as written.
  std::string cur = "/";
  std::size_t missing_depth = 0;  ///< components appended after the first missing one
  std::size_t i = 0;
  while (i < whole.size()) {
    std::size_t end = whole.find('/', i);
    if (end == std::string::npos) end = whole.size();
    std::string_view comp(whole.data() + i, end - i);
    i = end + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") {
      if (missing_depth > 0) --missing_depth;
      cur = parent(cur);
      continue;
    }
    std::string next = join(cur, comp);
    if (missing_depth > 0) {
      ++missing_depth;
      cur = std::move(next);
      continue;
    }
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno != ENOENT) throw ToolFailure("cannot resolve \"" + std::string(path) + "\": " + std::strerror(errno));
      missing_depth = 1;
      cur = std::move(next);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      std::unique_ptr<char, decltype(&std::free)> real(::realpath(next.c_str(), nullptr), &std::free);
      if (!real) {
        if (errno == ENOENT)
          throw ToolFailure("\"" + std::string(path) + "\" leads through a symbolic link to a missing file");
        throw ToolFailure("cannot resolve \"" + std::string(path) + "\": " + std::strerror(errno));
      }
      next = real.get();
    }
    cur = std::move(next);
  }
  if (!contains(cur)) {
    std::string roots;
    for (const auto& d : dirs_) roots += (roots.empty() ? "" : ", ") + d;
    throw ToolFailure("\"" + std::string(path) + "\" is outside the session's directories (" + roots + ")");
  }
  return ResolvedPath{cur, missing_depth == 0};
}

} // namespace acp::tools
