#include "tools/file_change.hpp"

#include "support/file_io.hpp"
#include "tools/tool_failure.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace acp::tools {

namespace {

using support::UniqueFd;

[[noreturn]] void fail(std::string_view what, std::string_view display_path, int err) {
  throw ToolFailure("cannot " + std::string(what) + " \"" + std::string(display_path) + "\": " + std::strerror(err));
}

// The atomic replacement, all relative to the directory's descriptor: a temporary file beside the
// target, fsynced, renamed over it, then the directory fsynced. The rename replaces the directory
// entry, so a file with other hard links (perhaps outside the roots) is never written through: those
// names keep the old text.
void replace_file(int dir, const std::string& name, std::string_view content, std::string_view display_path,
                  std::optional<mode_t> mode) {
  std::random_device rd;
  // A name at NAME_MAX leaves no room for the decoration: the temporary file's name is cut.
  std::string tmp = "." + name.substr(0, 200) + ".dsh-acp-" + std::to_string(rd()) + ".tmp";
  UniqueFd out(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode.value_or(0666)));
  if (!out) fail("write", display_path, errno);
  try {
    // umask applies to open's mode: an existing file keeps its own bits exactly.
    if (mode && ::fchmod(out.get(), *mode) != 0) fail("write", display_path, errno);
    if (const int err = support::write_all(out.get(), content)) fail("write", display_path, err);
    if (::fsync(out.get()) != 0) fail("write", display_path, errno);
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) fail("write", display_path, errno);
  } catch (...) {
    ::unlinkat(dir, tmp.c_str(), 0);
    throw;
  }
  // Best effort: the new text is in place; only its durability across a crash is at stake.
  (void)support::fsync_dir(dir, ".");
}

// The existing file `place` names, opened without following a link, and its status.
UniqueFd open_existing(const Place& place, std::string_view display_path, struct stat& st) {
  UniqueFd in(::openat(place.dir.get(), place.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!in) fail("read", display_path, errno);
  if (::fstat(in.get(), &st) != 0) fail("read", display_path, errno);
  if (S_ISDIR(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is a directory");
  if (!S_ISREG(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is not a regular file");
  return in;
}

void refuse_directory(const Place& place, std::string_view display_path) {
  if (!place.directory) return;
  throw ToolFailure("\"" + std::string(display_path) + "\" is a directory; write and edit need a file path");
}

} // namespace

std::string apply_edit(std::string_view before, const EditRequest& edit, std::string_view display_path,
                       std::size_t* replaced) {
  if (edit.old_string.empty()) throw ToolFailure("old_string is empty; use write to create or replace a whole file");
  if (edit.old_string == edit.new_string) throw ToolFailure("old_string and new_string are the same; nothing to change");
  std::size_t count = 0;
  for (std::size_t at = before.find(edit.old_string); at != std::string_view::npos;
       at = before.find(edit.old_string, at + edit.old_string.size()))
    ++count;
  if (count == 0) throw ToolFailure("old_string was not found in \"" + std::string(display_path) + "\"; the file is unchanged");
  if (count > 1 && !edit.replace_all)
    throw ToolFailure("old_string appears " + std::to_string(count) + " times in \"" + std::string(display_path) +
                      "\"; add surrounding lines to make it unique, or set replace_all; the file is unchanged");
  std::string after;
  after.reserve(before.size() + count * edit.new_string.size());
  std::size_t from = 0;
  for (std::size_t at = before.find(edit.old_string); at != std::string_view::npos;
       at = before.find(edit.old_string, from)) {
    after.append(before.substr(from, at - from));
    after += edit.new_string;
    from = at + edit.old_string.size();
  }
  after.append(before.substr(from));
  if (replaced) *replaced = count;
  return after;
}

std::string read_text_fd(int fd, std::string_view display_path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("read", display_path, errno);
  if (!S_ISREG(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is not a regular file");
  if (std::size_t(st.st_size) > kMaxEditableBytes)
    throw ToolFailure("\"" + std::string(display_path) + "\" is larger than " + std::to_string(kMaxEditableBytes >> 20) +
                      " MiB");
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) text.resize(text.size() + 4096);  // grew since the stat
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("read", display_path, errno);
    }
    if (n == 0) break;
    got += std::size_t(n);
    if (got > kMaxEditableBytes)
      throw ToolFailure("\"" + std::string(display_path) + "\" is larger than " + std::to_string(kMaxEditableBytes >> 20) +
                        " MiB");
  }
  text.resize(got);
  if (text.find('\0') != std::string::npos) throw ToolFailure("\"" + std::string(display_path) + "\" is a binary file");
  return text;
}

std::string read_text_file(const Roots& roots, std::string_view path) {
  Opened file = roots.open(path, O_RDONLY | O_NONBLOCK);
  return read_text_fd(file.fd.get(), roots.display(file.path));
}

FileChange write_local(const Roots& roots, std::string_view path, std::string content) {
  Place place = roots.place(path, /*create_parents=*/true);
  std::string display = roots.display(place.path);
  refuse_directory(place, display);
  FileChange change;
  change.path = place.path;
  std::optional<mode_t> mode;
  if (place.exists) {
    struct stat st {};
    UniqueFd in = open_existing(place, display, st);
    mode = st.st_mode & 07777;
    change.before = read_text_fd(in.get(), display);
  }
  replace_file(place.dir.get(), place.name, content, display, mode);
  change.after = std::move(content);
  return change;
}

FileChange edit_local(const Roots& roots, std::string_view path, const EditRequest& edit) {
  Place place = roots.place(path);
  std::string display = roots.display(place.path);
  refuse_directory(place, display);
  if (!place.exists) throw ToolFailure("\"" + display + "\" does not exist; use write to create it");
  FileChange change;
  change.path = place.path;
  struct stat st {};
  UniqueFd in = open_existing(place, display, st);
  change.before = read_text_fd(in.get(), display);
  change.after = apply_edit(*change.before, edit, display, &change.replacements);
  replace_file(place.dir.get(), place.name, change.after, display, st.st_mode & 07777);
  return change;
}

std::pair<std::string, std::string> changed_lines(std::string_view before, std::string_view after,
                                                  std::size_t context) {
  // Byte offsets of the first differing line's start and the last differing line's end, found
  // from both ends (the common suffix never overlaps the common prefix).
  std::size_t prefix = 0;
  const std::size_t shorter = std::min(before.size(), after.size());
  while (prefix < shorter && before[prefix] == after[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < shorter - prefix && before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) ++suffix;
  auto line_start = [](std::string_view text, std::size_t at, std::size_t lines) {
    // Back to the start of the line holding `at`, then `lines` more lines up.
    while (at > 0 && text[at - 1] != '\n') --at;
    for (std::size_t n = 0; n < lines && at > 0; ++n) {
      --at;
      while (at > 0 && text[at - 1] != '\n') --at;
    }
    return at;
  };
  auto line_end = [](std::string_view text, std::size_t at, std::size_t lines) {
    // On to the end of the line holding `at` (its '\n' excluded), then `lines` more lines down.
    while (at < text.size() && text[at] != '\n') ++at;
    for (std::size_t n = 0; n < lines && at < text.size(); ++n) {
      ++at;
      while (at < text.size() && text[at] != '\n') ++at;
    }
    return at;
  };
  const std::size_t start = line_start(before, prefix, context);  // the same bytes in both
  const std::size_t before_end = line_end(before, before.size() - suffix, context);
  const std::size_t after_end = line_end(after, after.size() - suffix, context);
  return {std::string(before.substr(start, before_end - start)), std::string(after.substr(start, after_end - start))};
}

} // namespace acp::tools
