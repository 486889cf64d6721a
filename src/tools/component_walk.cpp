// The component walk: Roots' resolution where openat2 is missing, and the judge of whatever the
// kernel's RESOLVE_BENEATH refused (an absolute symbolic link or a `..` that leaves one root for
// another). One component at a time, each opened O_PATH | O_NOFOLLOW relative to the descriptor of
// the directory before it; a symbolic link is read through its own descriptor and its text resolved
// here; `..` goes back to the previous descriptor, and from a root itself to the root's real parent,
// which must lie in a root again. No step ever opens a path by name from outside a root, so a
// rename or a swapped symlink during the walk leads to an error or to another file inside, never out.
#include "tools/roots.hpp"

#include "tools/beneath.hpp"
#include "tools/tool_failure.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>

namespace acp::tools {

namespace {

constexpr int kMaxLinks = 40;           // the kernel's own limit (MAXSYMLINKS)
constexpr int kMaxCreatedDirs = 4096;   // directories made by one walk (bounds a deletion race)

// How many components a jump or a link's text put in front of the `before` that were left.
std::size_t added(const std::deque<std::string>& rest, std::size_t before) {
  return rest.size() > before ? rest.size() - before : 0;
}

std::string rest_text(const std::deque<std::string>& rest) {
  std::string out;
  for (const auto& c : rest) out += "/" + c;
  return out;
}

} // namespace

Place Roots::walk(Beneath at, bool create_parents, std::string_view asked) const {
  std::size_t root = at.root;
  std::deque<std::string> rest = std::move(at.rest);
  std::vector<support::UniqueFd> dirs;  ///< below the root, one per component taken
  std::vector<std::string> names;
  std::size_t from_link = 0;  ///< how many of `rest`'s first components came from a link's text
  int links = 0, created = 0;
  auto current = [&] { return dirs.empty() ? roots_[root].fd.get() : dirs.back().get(); };
  auto here = [&] {
    std::string text = roots_[root].path;
    for (const auto& n : names) text += (text.back() == '/' ? "" : "/") + n;
    return text;
  };
  auto held_current = [&] { return support::UniqueFd(::fcntl(current(), F_DUPFD_CLOEXEC, 0)); };
  auto jump = [&](const std::string& absolute) {
    Beneath next = map_lexically(absolute, asked);
    root = next.root;
    rest = std::move(next.rest);
    dirs.clear();
    names.clear();
  };
  while (!rest.empty()) {
    std::string name = std::move(rest.front());
    rest.pop_front();
    const bool linked = from_link > 0;
    if (linked) --from_link;
    if (name == "..") {
      if (!dirs.empty()) {
        dirs.pop_back();
        names.pop_back();
      } else {
        const std::size_t before = rest.size();
        jump(here() + "/.." + rest_text(rest));
        if (from_link > 0) from_link = std::min(rest.size(), added(rest, before) + from_link);
      }
      continue;
    }
    const bool last = rest.empty();
    support::UniqueFd fd(::openat(current(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      const int err = errno;
      if (err != ENOENT) {
        if (err == ENOTDIR) throw ToolFailure("a parent of \"" + std::string(asked) + "\" is not a directory");
        throw ToolFailure("cannot resolve \"" + std::string(asked) + "\": " + std::strerror(err));
      }
      if (linked) throw ToolFailure("\"" + std::string(asked) + "\" leads through a symbolic link to a missing file");
      Place missing;
      missing.name = name;
      missing.path = here() + (here() == "/" ? "" : "/") + name;
      if (last) {
        missing.dir = held_current();
        return missing;
      }
      // Below a missing directory nothing exists to follow: the rest is text, and must stay in a
      // root as text (checked before anything is created).
      missing.path = lexically_normal(missing.path + rest_text(rest));
      map_lexically(missing.path, asked);
      if (!create_parents) return missing;
      if (++created > kMaxCreatedDirs) throw ToolFailure("cannot create the directories for \"" + std::string(asked) + "\"");
      if (::mkdirat(current(), name.c_str(), 0777) != 0 && errno != EEXIST)
        throw ToolFailure("cannot create the directory for \"" + std::string(asked) + "\": " + std::strerror(errno));
      rest.push_front(std::move(name));  // taken again: whatever is there now is walked as any entry
      continue;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      throw ToolFailure("cannot resolve \"" + std::string(asked) + "\": " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) throw ToolFailure("\"" + std::string(asked) + "\" has too many levels of symbolic links");
      std::optional<std::string> target = link_text(fd.get());
      if (!target || target->empty())
        throw ToolFailure("cannot resolve \"" + std::string(asked) + "\": " + std::strerror(target ? ENOENT : errno));
      const std::size_t before = rest.size();
      if (target->front() == '/') {
        jump(*target + rest_text(rest));  // into the root that holds it lexically, or refused
      } else {
        std::deque<std::string> parts = components(*target);
        rest.insert(rest.begin(), parts.begin(), parts.end());
      }
      from_link = std::min(rest.size(), added(rest, before) + from_link);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      dirs.push_back(std::move(fd));
      names.push_back(std::move(name));
      continue;
    }
    if (!last) throw ToolFailure("a parent of \"" + std::string(asked) + "\" is not a directory");
    Place place;
    place.dir = held_current();
    place.path = here() + (here() == "/" ? "" : "/") + name;
    place.name = std::move(name);
    place.exists = true;
    return place;
  }
  Place place;  // the path ends on a directory
  place.dir = held_current();
  place.path = here();
  place.exists = true;
  place.directory = true;
  return place;
}

} // namespace acp::tools
