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
#include <optional>

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

// Where a walk stands: a root, the descriptors of the directories taken below it, and the
// components still to take.
struct Roots::Walk {
  Walk(const Roots& roots, Beneath at, std::string_view asked)
      : roots(roots), asked(asked), root(at.root), rest(std::move(at.rest)) {}

  int current() const { return dirs.empty() ? roots.roots_[root].fd.get() : dirs.back().get(); }
  std::string here() const {
    std::string text = roots.roots_[root].path;
    for (const auto& n : names) text += (text.back() == '/' ? "" : "/") + n;
    return text;
  }
  support::UniqueFd held_current() const { return support::UniqueFd(::fcntl(current(), F_DUPFD_CLOEXEC, 0)); }
  void jump(const std::string& absolute) {
    Beneath next = roots.map_lexically(absolute, asked);
    root = next.root;
    rest = std::move(next.rest);
    dirs.clear();
    names.clear();
  }

  // `..`: the directory before, or from a root itself the root's real parent.
  void up() {
    if (!dirs.empty()) {
      dirs.pop_back();
      names.pop_back();
      return;
    }
    const std::size_t before = rest.size();
    jump(here() + "/.." + rest_text(rest));
    if (from_link > 0) from_link = std::min(rest.size(), added(rest, before) + from_link);
  }

  // `name` is not there: the place it would be when it is the last component, else the missing
  // place (without create_parents) or nothing after making the directory (walked again next).
  std::optional<Place> missing(std::string name, bool linked, bool last, bool create_parents) {
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
    roots.map_lexically(missing.path, asked);
    if (!create_parents) return missing;
    if (++created > kMaxCreatedDirs) throw ToolFailure("cannot create the directories for \"" + std::string(asked) + "\"");
    if (::mkdirat(current(), name.c_str(), 0777) != 0 && errno != EEXIST)
      throw ToolFailure("cannot create the directory for \"" + std::string(asked) + "\": " + std::strerror(errno));
    rest.push_front(std::move(name));  // taken again: whatever is there now is walked as any entry
    return std::nullopt;
  }

  // A symbolic link: its text goes in front of the rest.
  void follow(int link_fd) {
    if (++links > kMaxLinks) throw ToolFailure("\"" + std::string(asked) + "\" has too many levels of symbolic links");
    std::optional<std::string> target = link_text(link_fd);
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
  }

  const Roots& roots;
  std::string_view asked;
  std::size_t root;
  std::deque<std::string> rest;
  std::vector<support::UniqueFd> dirs;  ///< below the root, one per component taken
  std::vector<std::string> names;
  std::size_t from_link = 0;  ///< how many of `rest`'s first components came from a link's text
  int links = 0, created = 0;
};

Place Roots::walk(Beneath at, bool create_parents, std::string_view asked) const {
  Walk w(*this, std::move(at), asked);
  while (!w.rest.empty()) {
    std::string name = std::move(w.rest.front());
    w.rest.pop_front();
    const bool linked = w.from_link > 0;
    if (linked) --w.from_link;
    if (name == "..") {
      w.up();
      continue;
    }
    const bool last = w.rest.empty();
    support::UniqueFd fd(::openat(w.current(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      const int err = errno;
      if (err != ENOENT) {
        if (err == ENOTDIR) throw ToolFailure("a parent of \"" + std::string(asked) + "\" is not a directory");
        throw ToolFailure("cannot resolve \"" + std::string(asked) + "\": " + std::strerror(err));
      }
      if (std::optional<Place> missing = w.missing(std::move(name), linked, last, create_parents))
        return std::move(*missing);
      continue;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      throw ToolFailure("cannot resolve \"" + std::string(asked) + "\": " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) {
      w.follow(fd.get());
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      w.dirs.push_back(std::move(fd));
      w.names.push_back(std::move(name));
      continue;
    }
    if (!last) throw ToolFailure("a parent of \"" + std::string(asked) + "\" is not a directory");
    Place place;
    place.dir = w.held_current();
    place.path = w.here() + (w.here() == "/" ? "" : "/") + name;
    place.name = std::move(name);
    place.exists = true;
    return place;
  }
  Place place;  // the path ends on a directory
  place.dir = w.held_current();
  place.path = w.here();
  place.exists = true;
  place.directory = true;
  return place;
}

} // namespace acp::tools
