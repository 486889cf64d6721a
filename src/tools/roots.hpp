// Confinement: the directories a session's tools may read, write and search are its cwd and its
// additionalDirectories. Every path a model names is resolved physically (symbolic links followed,
// `..` applied to the real parent) and checked against them before anything is touched, so neither
// `../..`, an absolute path elsewhere nor a symlink pointing out of the roots reaches a file.
// Resolution makes blocking system calls: tools run off the connection thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace acp::tools {

struct ResolvedPath {
  std::string path;     ///< absolute, canonical for the part that exists
  bool exists = false;  ///< false: the last components do not exist yet (a file to create)
};

class Roots {
public:
  /// `cwd` and each additional directory must be absolute and name existing directories; they are
  /// stored canonical. Throws std::invalid_argument naming the bad one.
  explicit Roots(const std::string& cwd, const std::vector<std::string>& additional = {});

  const std::string& cwd() const { return dirs_.front(); }
  const std::vector<std::string>& dirs() const { return dirs_; }

  /// Resolves `path` (relative ones against the cwd). Throws ToolFailure when it is empty, holds a
  /// NUL, loops, or leads outside every root.
  ResolvedPath resolve(std::string_view path) const;

  /// Whether the canonical absolute `path` lies in a root (a root itself included).
  bool contains(std::string_view path) const;

  /// `path` relative to the root holding it (the cwd first), for messages and titles; the path
  /// itself when no root holds it.
  std::string display(std::string_view path) const;

private:
  std::vector<std::string> dirs_;  ///< canonical; the cwd first
};

} // namespace acp::tools
