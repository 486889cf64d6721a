// Glob patterns as glob, grep's `include` and .gitignore use them: `*` and `?` within one path
// segment, `[...]` classes (`!` or `^` negates, ranges), `{a,b}` alternatives, `**` for any number
// of segments, `\` escaping the next character. Matching never backtracks exponentially.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace acp::tools {

class GlobPattern {
public:
  /// Throws ToolFailure for an unterminated class or brace, or too many alternatives.
  explicit GlobPattern(std::string_view pattern);

  /// Whether the '/'-separated relative `path` matches the whole pattern.
  bool matches(std::string_view path) const;

  /// The pattern holds a '/' (before any trailing one): it is matched against the whole relative
  /// path, otherwise against the last segment (at any depth).
  bool anchored() const { return anchored_; }

private:
  std::vector<std::vector<std::string>> alternatives_;  ///< each brace expansion, split into segments
  bool anchored_ = false;
};

} // namespace acp::tools
