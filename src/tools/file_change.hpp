// The `write` and `edit` tools' changes. apply_edit is the edit itself (used on text the editor gave
// as well as on local files); the *_local functions carry a change out on the server's own file
// system, for clients without fs capabilities. A file is replaced atomically (a temporary file in
// its directory, fsynced, renamed over it, keeping its permission bits, every step relative to the
// directory's descriptor), so a crash leaves the old or the new text, never a torn one.
#pragma once

#include "tools/roots.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <string_view>

namespace acp::tools {

/// Files above this are not read whole for an edit or a diff.
inline constexpr std::size_t kMaxEditableBytes = 16u << 20;

struct EditRequest {
  std::string old_string;
  std::string new_string;
  bool replace_all = false;
};

/// `before` with the edit applied. Throws ToolFailure, naming `display_path`, when old_string is
/// empty, absent, or (without replace_all) not unique; `replaced` gets the count.
std::string apply_edit(std::string_view before, const EditRequest& edit, std::string_view display_path,
                       std::size_t* replaced = nullptr);

struct FileChange {
  std::string path;                   ///< resolved
  std::optional<std::string> before;  ///< nullopt: the file was created
  std::string after;
  std::size_t replacements = 0;  ///< edit: how many times old_string was replaced
};

/// The whole text of the regular file open at `fd` (at most kMaxEditableBytes). Throws ToolFailure.
std::string read_text_fd(int fd, std::string_view display_path);

/// The whole text of the file `path` names, opened beneath the roots. Throws ToolFailure.
std::string read_text_file(const Roots& roots, std::string_view path);

/// Writes `content` to `path` (opened beneath the roots), creating missing directories there. A
/// directory is refused. The file's entry is replaced (see replace_file): other hard links to it
/// keep their text.
FileChange write_local(const Roots& roots, std::string_view path, std::string content);

/// Applies `edit` to the file at `path` (opened beneath the roots). The file is untouched on failure.
FileChange edit_local(const Roots& roots, std::string_view path, const EditRequest& edit);

/// The lines of `before` and `after` that differ, with up to `context` unchanged lines around them
/// (one hunk: from the first changed line to the last), as a card's diff and the log's
/// `meta.diffs` show a change without carrying whole files.
std::pair<std::string, std::string> changed_lines(std::string_view before, std::string_view after,
                                                  std::size_t context = 3);

} // namespace acp::tools
