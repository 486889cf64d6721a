// glob and grep, run in the server: read-only walks of one directory inside the session's roots.
// Walks skip version-control directories, honour .gitignore files (those between the root and the
// searched directory too), go from directory descriptor to directory descriptor (the start opened
// beneath a root, each entry relative to its parent with O_NOFOLLOW), so they never follow a
// symbolic link, even one swapped in mid-walk, and stop at a bound of entries, saying so. Results are capped with a notice, never silently cut.
#pragma once

#include "tools/roots.hpp"

#include <cstddef>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace acp::tools {

struct SearchLimits {
  std::size_t max_files_listed = 100;     ///< glob: paths shown (newest first)
  std::size_t max_matches = 250;          ///< grep: matching lines shown
  std::size_t max_line_chars = 2000;      ///< grep: a matching line is cut past this
  std::size_t max_entries_walked = 200000;
  std::size_t max_file_bytes = 16u << 20; ///< grep: bigger files are skipped, and counted
};

/// Files under `path` (default: the cwd) matching `pattern`, newest first. Throws ToolFailure.
std::string glob_files(const Roots& roots, std::string_view pattern, std::optional<std::string_view> path,
                       std::stop_token stop = {}, const SearchLimits& limits = {});

/// Lines matching the Perl-syntax regular expression `pattern` in the file or directory `path`
/// (default: the cwd), files filtered by the glob `include`; grouped by file. Throws ToolFailure.
std::string grep_files(const Roots& roots, std::string_view pattern, std::optional<std::string_view> path,
                       std::optional<std::string_view> include, std::stop_token stop = {},
                       const SearchLimits& limits = {});

} // namespace acp::tools
