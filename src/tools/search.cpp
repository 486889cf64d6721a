#include "tools/search.hpp"

#include "support/unique_fd.hpp"
#include "support/utf8.hpp"
#include "tools/glob_pattern.hpp"
#include "tools/tool_failure.hpp"

#include <boost/regex.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace acp::tools {

namespace {

// ---- .gitignore ------------------------------------------------------------------------------

struct IgnoreRule {
  GlobPattern pattern;
  bool negate = false;
  bool dir_only = false;
};

// The rules of one directory's .gitignore, chained to those of the directories above it.
struct RuleSet {
  std::shared_ptr<const RuleSet> parent;
  std::string base;  ///< the directory holding the .gitignore (absolute)
  std::vector<IgnoreRule> rules;
};

std::string read_small_file(int dir, const char* name, std::size_t max) {
  support::UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, std::size_t(n));
    if (out.size() > max) break;
  }
  return out;
}

// `dir` is the directory's text path (rules match paths below it); `dir_fd` is where it is read.
std::shared_ptr<const RuleSet> with_gitignore(std::shared_ptr<const RuleSet> parent, const std::string& dir, int dir_fd) {
  std::string text = read_small_file(dir_fd, ".gitignore", 1u << 20);
  if (text.empty()) return parent;
  auto set = std::make_shared<RuleSet>();
  set->parent = std::move(parent);
  set->base = dir;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && line.back() == ' ' && !(line.size() > 1 && line[line.size() - 2] == '\\')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    IgnoreRule rule{GlobPattern("x"), false, false};
    if (line.front() == '!') {
      rule.negate = true;
      line.remove_prefix(1);
    }
    if (!line.empty() && line.back() == '/') {
      rule.dir_only = true;
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    try {
      rule.pattern = GlobPattern(line);
    } catch (const ToolFailure&) {
      continue;  // a line git would not match either
    }
    set->rules.push_back(std::move(rule));
  }
  return set->rules.empty() ? set->parent : set;
}

// The last rule that matches decides, deeper .gitignore files after shallower ones.
bool ignored(const RuleSet* set, const std::string& path, bool is_dir) {
  for (; set; set = set->parent.get()) {
    if (path.size() <= set->base.size()) continue;
    std::string_view rel(path.data() + set->base.size() + 1, path.size() - set->base.size() - 1);
    for (auto it = set->rules.rbegin(); it != set->rules.rend(); ++it) {
      if (it->dir_only && !is_dir) continue;
      if (it->pattern.matches(rel)) return !it->negate;
    }
  }
  return false;
}

// ---- the walk ---------------------------------------------------------------------------------

bool is_vcs_dir(std::string_view name) { return name == ".git" || name == ".hg" || name == ".svn"; }

struct WalkStats {
  std::size_t entries = 0;
  bool bounded = false;       ///< stopped at max_entries_walked
  bool too_deep = false;      ///< directories below kMaxDepth were not entered
};

// Directories open at once during a walk, one per level: deeper ones are left out (and said so).
constexpr std::size_t kMaxDepth = 256;

using FileVisit = std::function<bool(const std::string& path, int dir_fd, const char* name)>;

// The .gitignore rules of the directories from the root holding `dir` (its text path) down to
// it, read through descriptors opened one level at a time without following links: a directory
// that is not what its text says (renamed, swapped for a link) ends the chain, never leads out.
std::shared_ptr<const RuleSet> rules_above(const Roots& roots, const std::string& dir) {
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const std::string& root = roots.root_path(i);
    const bool holds = root == "/" || (dir.compare(0, root.size(), root) == 0 &&
                                       (dir.size() == root.size() || dir[root.size()] == '/'));
    if (!holds) continue;
    std::string at = root;
    std::shared_ptr<const RuleSet> rules = with_gitignore(nullptr, at, roots.root_fd(i));
    support::UniqueFd level;
    std::size_t pos = root.size() == 1 ? 1 : root.size() + 1;
    while (pos < dir.size()) {
      std::size_t slash = dir.find('/', pos);
      if (slash == std::string::npos) slash = dir.size();
      const std::string name = dir.substr(pos, slash - pos);
      support::UniqueFd next(::openat(level ? level.get() : roots.root_fd(i), name.c_str(),
                                      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!next) break;
      level = std::move(next);
      at = dir.substr(0, slash);
      rules = with_gitignore(rules, at, level.get());
      pos = slash + 1;
    }
    return rules;
  }
  return nullptr;
}

// Calls `file(path, dir_fd, name)` for every regular file under the directory open at `top` (whose
// text path is `dir`), in no particular order, until it returns false. Each directory is opened
// relative to its parent's descriptor with O_NOFOLLOW, so a link (or a directory swapped for one
// mid-walk) is never entered; the callee opens or stats the file relative to `dir_fd` the same way.
void walk(const Roots& roots, support::UniqueFd top, const std::string& dir, const SearchLimits& limits,
          std::stop_token stop, WalkStats& stats, const FileVisit& file) {
  struct Level {
    std::unique_ptr<DIR, int (*)(DIR*)> handle;
    std::string path;
    std::shared_ptr<const RuleSet> rules;
  };
  std::vector<Level> levels;
  auto enter = [&](support::UniqueFd fd, std::string path, std::shared_ptr<const RuleSet> rules) {
    DIR* handle = ::fdopendir(fd.get());
    if (!handle) return;  // unreadable: skipped, as ripgrep does
    fd.release();
    levels.push_back(Level{{handle, &::closedir}, std::move(path), std::move(rules)});
  };
  enter(std::move(top), dir, rules_above(roots, dir));
  while (!levels.empty()) {
    if (stop.stop_requested()) throw ToolFailure("cancelled");
    Level& d = levels.back();
    dirent* e = ::readdir(d.handle.get());
    if (!e) {
      levels.pop_back();
      continue;
    }
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++stats.entries > limits.max_entries_walked) {
      stats.bounded = true;
      return;
    }
    const int dir_fd = ::dirfd(d.handle.get());
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
    }
    std::string path = d.path == "/" ? "/" + std::string(name) : d.path + "/" + std::string(name);
    if (type == DT_DIR) {
      if (is_vcs_dir(name) || ignored(d.rules.get(), path, true)) continue;
      if (levels.size() >= kMaxDepth) {
        stats.too_deep = true;
        continue;
      }
      support::UniqueFd sub(::openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) continue;  // gone, unreadable, or a link now
      std::shared_ptr<const RuleSet> rules = with_gitignore(d.rules, path, sub.get());
      enter(std::move(sub), std::move(path), std::move(rules));  // `d` may dangle from here
    } else if (type == DT_REG) {
      if (!ignored(d.rules.get(), path, false) && !file(path, dir_fd, e->d_name)) return;
    }
  }
}

// The directory or file a search starts from, opened beneath the roots.
Opened search_target(const Roots& roots, std::optional<std::string_view> path) {
  return roots.open(path.value_or(roots.cwd()), O_RDONLY | O_NONBLOCK);
}

std::string relative_to(const std::string& base, const std::string& path) {
  if (path.size() > base.size() && path.compare(0, base.size(), base) == 0)
    return path.substr(base == "/" ? 1 : base.size() + 1);
  return path;
}

std::string walk_notice(const WalkStats& stats, const SearchLimits& limits) {
  std::string out;
  if (stats.too_deep)
    out += "\n(Directories more than " + std::to_string(kMaxDepth) + " levels deep were not searched.)";
  if (stats.bounded)
    out += "\n(The search stopped after " + std::to_string(limits.max_entries_walked) +
           " entries; search a smaller directory for complete results.)";
  return out;
}

boost::regex compile_pattern(std::string_view pattern) {
  if (pattern.empty()) throw ToolFailure("the pattern is empty");
  boost::regex re;
  try {
    re.assign(pattern.begin(), pattern.end(), boost::regex::perl);
  } catch (const boost::regex_error& e) {
    throw ToolFailure("invalid regular expression: " + std::string(e.what()));
  }
  return re;
}

// The bytes of an open file of `size` bytes (fewer when it shrank meanwhile).
std::string read_all(int fd, std::size_t size) {
  std::string text(size, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += std::size_t(n);
  }
  text.resize(got);
  return text;
}

// A matching line as shown: cut to max_line_chars at a character boundary, never inside a UTF-8
// sequence.
std::string shown_line(std::string_view line, const SearchLimits& limits) {
  std::string shown(line.substr(0, std::min(line.size(), limits.max_line_chars * 4)));
  if (shown.size() > limits.max_line_chars) {
    shown.resize(support::utf8_floor(shown, limits.max_line_chars));
    shown += "... (line truncated)";
  }
  return shown;
}

// One grep's matches so far, as the text the model reads: each file's name, then its matching lines.
struct Grep {
  Grep(const Roots& roots, const boost::regex& re, const SearchLimits& limits) : roots(roots), re(re), limits(limits) {}

  const Roots& roots;
  const boost::regex& re;
  const SearchLimits& limits;
  std::string out;
  std::size_t matches = 0, skipped_large = 0;
  bool capped = false;

  // `fd`: the file, open; its size is checked before it is read. False once the matches are capped.
  bool search_open_file(const std::string& file, int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return true;
    if (std::size_t(st.st_size) > limits.max_file_bytes) {
      ++skipped_large;
      return true;
    }
    const std::string text = read_all(fd, std::size_t(st.st_size));
    if (std::memchr(text.data(), '\0', std::min<std::size_t>(text.size(), 8192))) return true;  // binary
    search_text(file, text);
    return !capped;
  }

  void search_text(const std::string& file, const std::string& text) {
    bool header = false;
    std::size_t line_no = 0;
    for (std::size_t start = 0; start <= text.size() && !capped;) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (start == text.size() && end == start) break;
      ++line_no;
      std::string_view line(text.data() + start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      start = end + 1;
      bool hit = false;
      try {
        hit = boost::regex_search(line.begin(), line.end(), re, boost::match_not_dot_newline);
      } catch (const std::runtime_error& e) {
        throw ToolFailure("the regular expression is too complex for " + roots.display(file) + ": " + e.what());
      }
      if (!hit) continue;
      if (matches == limits.max_matches) {
        capped = true;
        break;
      }
      ++matches;
      if (!header) {
        if (!out.empty()) out += "\n";
        out += roots.display(file) + "\n";
        header = true;
      }
      out += "  " + std::to_string(line_no) + ": " + shown_line(line, limits) + "\n";
    }
  }
};

} // namespace

std::string glob_files(const Roots& roots, std::string_view pattern, std::optional<std::string_view> path,
                       std::stop_token stop, const SearchLimits& limits) {
  GlobPattern glob(pattern);
  Opened target = search_target(roots, path);
  struct stat st {};
  if (::fstat(target.fd.get(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw ToolFailure("\"" + roots.display(target.path) + "\" is not a directory");
  struct Hit {
    std::int64_t mtime_ns;
    std::string path;
  };
  // Newest first; the heap keeps the oldest shown on top so the newest N survive in O(N) memory.
  auto newer = [](const Hit& a, const Hit& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.path < b.path;
  };
  std::priority_queue<Hit, std::vector<Hit>, decltype(newer)> kept(newer);
  std::size_t total = 0;
  WalkStats stats;
  const std::string base = target.path;
  walk(roots, std::move(target.fd), base, limits, stop, stats, [&](const std::string& file, int dir, const char* name) {
    if (!glob.matches(relative_to(base, file))) return true;
    struct stat fst {};
    if (::fstatat(dir, name, &fst, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(fst.st_mode)) return true;
    ++total;
    kept.push({std::int64_t(fst.st_mtim.tv_sec) * 1000000000 + fst.st_mtim.tv_nsec, file});
    if (kept.size() > limits.max_files_listed) kept.pop();
    return true;
  });
  if (total == 0) return "No files found." + walk_notice(stats, limits);
  std::vector<Hit> hits;
  while (!kept.empty()) {
    hits.push_back(kept.top());
    kept.pop();
  }
  std::reverse(hits.begin(), hits.end());
  std::string out;
  for (const auto& h : hits) out += roots.display(h.path) + "\n";
  out.pop_back();
  if (total > hits.size())
    out += "\n\n(Showing the " + std::to_string(hits.size()) + " most recently modified of " + std::to_string(total) +
           " files; narrow the pattern or the path to see the others.)";
  return out + walk_notice(stats, limits);
}

std::string grep_files(const Roots& roots, std::string_view pattern, std::optional<std::string_view> path,
                       std::optional<std::string_view> include, std::stop_token stop, const SearchLimits& limits) {
  const boost::regex re = compile_pattern(pattern);
  std::optional<GlobPattern> filter;
  if (include) filter.emplace(*include);
  Opened target = search_target(roots, path);
  const std::string base = target.path;
  Grep grep(roots, re, limits);
  auto search_file = [&](const std::string& file, int dir, const char* name) {
    if (filter && !filter->matches(relative_to(base, file))) return true;
    // O_NOFOLLOW: an entry swapped for a link since the directory was read is not followed;
    // O_NONBLOCK: nor does a FIFO put there block the search.
    support::UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    return !fd || grep.search_open_file(file, fd.get());
  };
  WalkStats stats;
  struct stat st {};
  if (::fstat(target.fd.get(), &st) != 0) throw ToolFailure("cannot search \"" + roots.display(base) + "\"");
  if (S_ISREG(st.st_mode)) {
    grep.search_open_file(base, target.fd.get());
  } else if (S_ISDIR(st.st_mode)) {
    walk(roots, std::move(target.fd), base, limits, stop, stats, search_file);
  } else {
    throw ToolFailure("\"" + roots.display(base) + "\" is neither a file nor a directory");
  }
  std::string& out = grep.out;
  if (grep.matches == 0) out = "No matches.";
  else out.pop_back();
  if (grep.capped)
    out += "\n\n(Showing the first " + std::to_string(limits.max_matches) +
           " matches; there are more. Narrow the pattern, the path or include.)";
  if (grep.skipped_large > 0)
    out += "\n(" + std::to_string(grep.skipped_large) + " file" + (grep.skipped_large == 1 ? "" : "s") +
           " larger than " + std::to_string(limits.max_file_bytes >> 20) + " MiB not searched.)";
  return out + walk_notice(stats, limits);
}

} // namespace acp::tools
