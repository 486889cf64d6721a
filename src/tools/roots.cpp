#include "tools/roots.hpp"

#include "tools/beneath.hpp"
#include "tools/tool_failure.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>

namespace acp::tools {

std::deque<std::string> Roots::components(std::string_view path) {
  std::deque<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    std::string_view c = path.substr(i, end - i);
    if (!c.empty() && c != ".") out.emplace_back(c);
    i = end + 1;
  }
  return out;
}

namespace {

std::string joined(const std::deque<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out.empty() ? "." : out;
}

std::string child(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

} // namespace

std::string Roots::lexically_normal(std::string_view path) {
  std::deque<std::string> out;
  for (auto& c : components(path)) {
    if (c != "..") out.push_back(std::move(c));
    else if (!out.empty()) out.pop_back();
  }
  std::string text;
  for (const auto& c : out) text += "/" + c;
  return text.empty() ? "/" : text;
}

namespace {

// The path ends in a way that names a directory (`dir/`, `dir/.`, `..`).
bool names_directory(std::string_view path) {
  return path.back() == '/' || path == "." || path == ".." || path.ends_with("/.") || path.ends_with("/..");
}

void check_text(std::string_view path) {
  if (path.empty()) throw ToolFailure("the path is empty");
  if (path.find('\0') != std::string_view::npos) throw ToolFailure("the path holds a NUL character");
  if (path.size() > PATH_MAX) throw ToolFailure("the path is longer than " + std::to_string(PATH_MAX) + " bytes");
}

[[noreturn]] void fail(std::string_view what, std::string_view asked, int err) {
  if (err == ENOENT) throw ToolFailure("\"" + std::string(asked) + "\" does not exist");
  if (err == ELOOP) throw ToolFailure("\"" + std::string(asked) + "\" has too many levels of symbolic links");
  if (err == ENOTDIR) throw ToolFailure("a parent of \"" + std::string(asked) + "\" is not a directory");
  throw ToolFailure("cannot " + std::string(what) + " \"" + std::string(asked) + "\": " + std::strerror(err));
}

} // namespace

Roots::Roots(const std::string& cwd, const std::vector<std::string>& additional, Resolution resolution) {
  auto add = [this](const std::string& dir) {
    if (dir.empty() || dir.front() != '/') throw std::invalid_argument("\"" + dir + "\" is not an absolute path");
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(dir.c_str(), nullptr), &std::free);
    if (!real) throw std::invalid_argument("\"" + dir + "\": " + std::strerror(errno));
    // The one open by name: the client named this directory; everything else is opened beneath it.
    support::UniqueFd fd(::open(real.get(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOTDIR) throw std::invalid_argument("\"" + dir + "\" is not a directory");
      throw std::invalid_argument("\"" + dir + "\": " + std::strerror(errno));
    }
    roots_.push_back(Root{real.get(), lexically_normal(dir), std::move(fd)});
  };
  add(cwd);
  for (const auto& d : additional) add(d);
  kernel_ = resolution == Resolution::automatic && kernel_resolves_beneath(roots_.front().fd.get());
}

std::vector<std::string> Roots::dirs() const {
  std::vector<std::string> out;
  for (const auto& r : roots_) out.push_back(r.path);
  return out;
}

bool Roots::contains(std::string_view path) const {
  for (const auto& root : roots_) {
    if (root.path == "/") return true;
    if (path.size() >= root.path.size() && path.substr(0, root.path.size()) == root.path &&
        (path.size() == root.path.size() || path[root.path.size()] == '/'))
      return true;
  }
  return false;
}

std::string Roots::display(std::string_view path) const {
  for (const auto& root : roots_) {
    if (path == root.path) return ".";
    if (root.path != "/" && path.size() > root.path.size() && path.substr(0, root.path.size()) == root.path &&
        path[root.path.size()] == '/')
      return std::string(path.substr(root.path.size() + 1));
  }
  return std::string(path);
}

void Roots::outside(std::string_view asked) const {
  std::string list;
  for (const auto& r : roots_) list += (list.empty() ? "" : ", ") + r.path;
  throw ToolFailure("\"" + std::string(asked) + "\" is outside the session's directories (" + list + ")");
}

Roots::Beneath Roots::map_lexically(std::string_view absolute, std::string_view asked) const {
  std::deque<std::string> parts = components(absolute);
  // Each round consumes a `..` that climbs out of a root, so this ends.
  for (;;) {
    std::size_t best = roots_.size(), best_len = 0;
    for (std::size_t i = 0; i < roots_.size(); ++i) {
      for (const std::string* spelling : {&roots_[i].path, &roots_[i].spelled}) {
        std::deque<std::string> root_parts = components(*spelling);
        if (root_parts.size() > parts.size() || (best < roots_.size() && root_parts.size() <= best_len)) continue;
        if (std::equal(root_parts.begin(), root_parts.end(), parts.begin())) {
          best = i;
          best_len = root_parts.size();
        }
      }
    }
    if (best == roots_.size()) outside(asked);
    parts.erase(parts.begin(), parts.begin() + std::ptrdiff_t(best_len));
    if (parts.empty() || parts.front() != "..") return Beneath{best, std::move(parts)};
    // `root/..`: the root's real parent, whatever spelling matched.
    parts.pop_front();
    std::deque<std::string> above = components(roots_[best].path);
    if (!above.empty()) above.pop_back();
    parts.insert(parts.begin(), above.begin(), above.end());
  }
}

std::string Roots::text_of(int fd, const std::string& fallback) const {
  // The kernel's name for what was opened: symbolic links and `..` resolved, as the old
  // resolution by name showed it. Without /proc, the path as resolved lexically.
  std::optional<std::string> real = descriptor_path(fd);
  return real && contains(*real) ? *real : fallback;
}

Place Roots::fast_place(const Beneath& at) const {
  // The parent opened by the kernel beneath the root and the last name looked at without following
  // it; anything unusual (a link there, a missing parent, a refusal) is left to the walk.
  if (at.rest.empty() || at.rest.back() == "..") return {};
  int dir = open_beneath(roots_[at.root].fd.get(), joined(at.rest, at.rest.size() - 1), O_PATH | O_DIRECTORY);
  if (dir < 0) return {};
  Place place;
  place.dir = support::UniqueFd(dir);
  place.name = at.rest.back();
  struct stat st {};
  if (::fstatat(dir, place.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return {};
    place.exists = true;
    place.directory = S_ISDIR(st.st_mode);
  } else if (errno != ENOENT) {
    return {};
  }
  std::string lexical = roots_[at.root].path;
  for (std::size_t i = 0; i + 1 < at.rest.size(); ++i) lexical = child(lexical, at.rest[i]);
  place.path = child(text_of(dir, lexical), place.name);
  return place;
}

Opened Roots::open(std::string_view path, int flags) const {
  check_text(path);
  if (names_directory(path)) flags |= O_DIRECTORY;  // `file.txt/` is not the file
  Beneath at = map_lexically(path.front() == '/' ? std::string(path) : child(cwd(), path), path);
  if (kernel_) {
    int fd = open_beneath(roots_[at.root].fd.get(), joined(at.rest, at.rest.size()), flags);
    if (fd >= 0) {
      std::string lexical = roots_[at.root].path;
      for (const auto& c : at.rest) lexical = child(lexical, c);
      return Opened{support::UniqueFd(fd), text_of(fd, lexical)};
    }
    // Refused or failed: the walk decides (a link or `..` into another root is allowed; it names
    // the reason otherwise).
  }
  for (int attempt = 0;; ++attempt) {
    Place place = walk(at, false, path);
    if (!place.exists) throw ToolFailure("\"" + std::string(path) + "\" does not exist");
    int fd = ::openat(place.dir.get(), place.name.empty() ? "." : place.name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return Opened{support::UniqueFd(fd), std::move(place.path)};
    // ELOOP: the name became a symbolic link since the walk looked; look again.
    if (errno == ENOTDIR && (flags & O_DIRECTORY)) throw ToolFailure("\"" + std::string(path) + "\" is not a directory");
    if (errno != ELOOP || attempt == 3) fail("open", path, errno);
  }
}

Place Roots::place(std::string_view path, bool create_parents) const {
  check_text(path);
  Beneath at = map_lexically(path.front() == '/' ? std::string(path) : child(cwd(), path), path);
  const bool directory = names_directory(path);
  Place place;
  if (kernel_) place = fast_place(at);
  // Nothing is created for a path naming a directory: no file will be written there.
  if (!place.dir) place = walk(std::move(at), create_parents && !directory, path);
  if (directory) {
    if (place.exists && !place.directory) throw ToolFailure("\"" + std::string(path) + "\" is not a directory");
    place.directory = true;
  }
  return place;
}

ResolvedPath Roots::resolve(std::string_view path) const {
  Place place = this->place(path);
  return ResolvedPath{std::move(place.path), place.exists, place.directory};
}

} // namespace acp::tools
