// Confinement: the directories a session's tools may read, write and search are its cwd and its
// additionalDirectories. Each root is held open as a directory descriptor from the start, and every
// path a model names is opened *beneath* one of them, never again by name: openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS where the kernel has it, else (and for what the kernel
// refuses but the roots allow, see below) a walk of O_PATH descriptors one component at a time, with
// O_NOFOLLOW and symbolic links read and resolved here. So neither `../..`, an absolute path
// elsewhere, a symlink pointing out of the roots, nor a directory swapped for such a symlink while
// a call runs reaches a file outside.
//
// How a path is taken:
//  - It is made absolute against the cwd and mapped *lexically* to the root whose path (canonical,
//    or as the client spelled it) is a prefix of it; leading `..` past that root apply to the
//    root's canonical path (its real parent) and the result is mapped again.
//  - Below the root, `..` and symlinks are resolved physically (as the kernel does). A symlink
//    that stays inside works; an absolute one, or a `..` climbing out of the root, is followed
//    only when it lands lexically in a root (another root included) and is resolved beneath that
//    root; anything else is refused as outside.
// Resolution makes blocking system calls: tools run off the connection thread.
#pragma once

#include "support/unique_fd.hpp"

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace acp::tools {

/// How paths are resolved beneath a root's descriptor.
enum class Resolution {
  automatic,       ///< openat2 where the kernel has it, the component walk where it answers ENOSYS
  component_walk,  ///< the O_PATH walk alone (what kernels before 5.6 get; tests force it)
};

/// Where a path leads, for a check and the editor.
struct ResolvedPath {
  std::string path;        ///< absolute, canonical for the part that exists
  bool exists = false;     ///< false: the last components do not exist yet (a file to create)
  bool directory = false;  ///< it is a directory, or the path ends with '/'
};

/// Where a path leads, held by descriptor: the directory holding it and its name there.
struct Place {
  support::UniqueFd dir;   ///< O_PATH|O_DIRECTORY, beneath a root; empty when a parent is missing
  std::string name;        ///< the last component, not a symbolic link when looked at; empty: `dir` itself
  std::string path;        ///< absolute text, for messages and the editor
  bool exists = false;
  bool directory = false;  ///< exists as a directory, or the path ends with '/'
};

/// A file or directory opened beneath a root.
struct Opened {
  support::UniqueFd fd;
  std::string path;  ///< absolute, canonical when it was opened
};

class Roots {
public:
  /// `cwd` and each additional directory must be absolute and name existing directories; each is
  /// opened (O_PATH) and its canonical path kept. Throws std::invalid_argument naming the bad one.
  explicit Roots(const std::string& cwd, const std::vector<std::string>& additional = {},
                 Resolution resolution = Resolution::automatic);

  const std::string& cwd() const { return roots_.front().path; }
  std::vector<std::string> dirs() const;
  std::size_t size() const { return roots_.size(); }
  const std::string& root_path(std::size_t i) const { return roots_[i].path; }
  int root_fd(std::size_t i) const { return roots_[i].fd.get(); }
  /// Whether openat2 does the resolving (false: the component walk).
  bool kernel_resolution() const { return kernel_; }

  /// Opens what `path` names (relative ones against the cwd) with open(2) `flags`, beneath the
  /// root holding it. Throws ToolFailure when it is empty, holds a NUL, loops, does not exist or
  /// leads outside every root.
  Opened open(std::string_view path, int flags) const;

  /// Where `path` leads, for a change: its directory, opened, and its name there. With
  /// `create_parents`, missing directories are made on the way (beneath the root, never by name);
  /// without, a missing parent leaves `dir` empty and `exists` false. Throws ToolFailure.
  Place place(std::string_view path, bool create_parents = false) const;

  /// place() for a check alone (the editor does the work): the path, whether it exists and is a directory.
  ResolvedPath resolve(std::string_view path) const;

  /// Whether the canonical absolute `path` lies in a root (a root itself included).
  bool contains(std::string_view path) const;

  /// `path` relative to the root holding it (the cwd first), for messages and titles; the path
  /// itself when no root holds it.
  std::string display(std::string_view path) const;

private:
  struct Root {
    std::string path;       ///< canonical
    std::string spelled;    ///< as given, lexically normal (may differ when it holds a symlink)
    support::UniqueFd fd;   ///< O_PATH|O_DIRECTORY
  };
  /// A position below a root: the components still to resolve beneath it.
  struct Beneath {
    std::size_t root = 0;
    std::deque<std::string> rest;
  };

  /// The components of `path`, without empty ones and `.`; `..` kept (below a root it is physical).
  static std::deque<std::string> components(std::string_view path);
  /// `path` with `..` applied to the text (a root's spelling; what lies below a missing directory).
  static std::string lexically_normal(std::string_view path);
  Beneath map_lexically(std::string_view absolute, std::string_view asked) const;
  Place walk(Beneath start, bool create_parents, std::string_view asked) const;
  struct Walk;  ///< walk()'s position and counts (component_walk.cpp)
  Place fast_place(const Beneath& at) const;
  std::string text_of(int fd, const std::string& fallback) const;
  [[noreturn]] void outside(std::string_view asked) const;

  std::vector<Root> roots_;  ///< the cwd first
  bool kernel_ = false;
};

} // namespace acp::tools
