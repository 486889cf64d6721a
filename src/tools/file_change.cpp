#include "tools/file_change.hpp"

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

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(std::string_view what, std::string_view display_path, int err) {
  throw ToolFailure("cannot " + std::string(what) + " \"" + std::string(display_path) + "\": " + std::strerror(err));
}

void write_all(int fd, std::string_view data, std::string_view display_path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", display_path, errno);
    }
    data.remove_prefix(std::size_t(n));
  }
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Creates the missing directories above `path` (all inside a root: the path was confined).
void make_parents(const std::string& path, std::string_view display_path) {
  std::string dir = parent_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw ToolFailure("a parent of \"" + std::string(display_path) + "\" is not a directory");
    return;
  }
  make_parents(dir, display_path);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) fail("create the directory for", display_path, errno);
}

void replace_file(const std::string& path, std::string_view content, std::string_view display_path,
                  std::optional<mode_t> mode) {
  std::string dir = parent_of(path);
  std::string name = path.substr(dir.size() == 1 ? 1 : dir.size() + 1);
  std::random_device rd;
  std::string tmp = dir + (dir == "/" ? "" : "/") + "." + name + ".dsh-acp-" + std::to_string(rd()) + ".tmp";
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode.value_or(0666))};
  if (out.fd < 0) fail("write", display_path, errno);
  try {
    // umask applies to open's mode: an existing file keeps its own bits exactly.
    if (mode && ::fchmod(out.fd, *mode) != 0) fail("write", display_path, errno);
    write_all(out.fd, content, display_path);
    if (::fsync(out.fd) != 0) fail("write", display_path, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("write", display_path, errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
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

std::string read_text_file(const std::string& path, std::string_view display_path) {
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (in.fd < 0) {
    if (errno == ENOENT) throw ToolFailure("\"" + std::string(display_path) + "\" does not exist");
    fail("read", display_path, errno);
  }
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) fail("read", display_path, errno);
  if (!S_ISREG(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is not a regular file");
  if (std::size_t(st.st_size) > kMaxEditableBytes)
    throw ToolFailure("\"" + std::string(display_path) + "\" is larger than " + std::to_string(kMaxEditableBytes >> 20) +
                      " MiB");
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) text.resize(text.size() + 4096);  // grew since the stat
    ssize_t n = ::read(in.fd, text.data() + got, text.size() - got);
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

FileChange write_local(const Roots& roots, std::string_view path, std::string content) {
  ResolvedPath target = roots.resolve(path);
  std::string display = roots.display(target.path);
  FileChange change;
  change.path = target.path;
  std::optional<mode_t> mode;
  if (target.exists) {
    struct stat st {};
    if (::stat(target.path.c_str(), &st) != 0) fail("write", display, errno);
    if (S_ISDIR(st.st_mode)) throw ToolFailure("\"" + display + "\" is a directory");
    if (!S_ISREG(st.st_mode)) throw ToolFailure("\"" + display + "\" is not a regular file");
    mode = st.st_mode & 07777;
    change.before = read_text_file(target.path, display);
  } else {
    make_parents(target.path, display);
  }
  replace_file(target.path, content, display, mode);
  change.after = std::move(content);
  return change;
}

FileChange edit_local(const Roots& roots, std::string_view path, const EditRequest& edit) {
  ResolvedPath target = roots.resolve(path);
  std::string display = roots.display(target.path);
  if (!target.exists) throw ToolFailure("\"" + display + "\" does not exist; use write to create it");
  FileChange change;
  change.path = target.path;
  change.before = read_text_file(target.path, display);
  change.after = apply_edit(*change.before, edit, display, &change.replacements);
  struct stat st {};
  if (::stat(target.path.c_str(), &st) != 0) fail("edit", display, errno);
  replace_file(target.path, change.after, display, st.st_mode & 07777);
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
