#include "tools/glob_pattern.hpp"

#include "tools/tool_failure.hpp"

#include <vector>

namespace acp::tools {

namespace {

constexpr std::size_t kMaxAlternatives = 256;

// The closing brace of the group opening at `open`, honouring nesting and escapes; npos if none.
std::size_t closing_brace(std::string_view p, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '{') {
      ++depth;
    } else if (p[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

void expand_braces(std::string_view p, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] != '{') continue;
    std::size_t close = closing_brace(p, i);
    if (close == std::string_view::npos) throw ToolFailure("the pattern has a '{' without its '}'");
    std::string_view inner = p.substr(i + 1, close - i - 1);
    // Split the group at its top-level commas.
    std::vector<std::string_view> options;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t k = 0; k < inner.size(); ++k) {
      if (inner[k] == '\\') ++k;
      else if (inner[k] == '{') ++depth;
      else if (inner[k] == '}') --depth;
      else if (inner[k] == ',' && depth == 0) {
        options.push_back(inner.substr(start, k - start));
        start = k + 1;
      }
    }
    options.push_back(inner.substr(start));
    for (auto option : options) {
      if (out.size() >= kMaxAlternatives) throw ToolFailure("the pattern expands to too many alternatives");
      std::string expanded = std::string(p.substr(0, i)) + std::string(option) + std::string(p.substr(close + 1));
      expand_braces(expanded, out);
    }
    return;
  }
  if (out.size() >= kMaxAlternatives) throw ToolFailure("the pattern expands to too many alternatives");
  out.emplace_back(p);
}

std::vector<std::string> split_segments(std::string_view p) {
  std::vector<std::string> segs;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= p.size(); ++i) {
    if (i < p.size() && p[i] == '\\') {
      ++i;
      continue;
    }
    if (i == p.size() || p[i] == '/') {
      if (i > start) segs.emplace_back(p.substr(start, i - start));
      start = i + 1;
    }
  }
  return segs;
}

// `[...]` at p[i] (p[i] == '['): whether c is in the class; `next` gets the index after it.
bool class_matches(std::string_view p, std::size_t i, char c, std::size_t& next) {
  std::size_t k = i + 1;
  bool negate = false;
  if (k < p.size() && (p[k] == '!' || p[k] == '^')) {
    negate = true;
    ++k;
  }
  bool hit = false;
  bool first = true;
  for (; k < p.size() && (first || p[k] != ']'); first = false) {
    char lo = p[k];
    if (lo == '\\' && k + 1 < p.size()) lo = p[++k];
    ++k;
    char hi = lo;
    if (k + 1 < p.size() && p[k] == '-' && p[k + 1] != ']') {
      hi = p[k + 1];
      if (hi == '\\' && k + 2 < p.size()) hi = p[++k + 1];
      k += 2;
    }
    if (static_cast<unsigned char>(c) >= static_cast<unsigned char>(lo) &&
        static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi))
      hit = true;
  }
  if (k >= p.size()) throw ToolFailure("the pattern has a '[' without its ']'");
  next = k + 1;
  return hit != negate;
}

// One segment against one name: `*` and `?` never cross '/', which a name does not hold. The
// classic single-star backtrack: linear in practice, quadratic at worst.
bool segment_matches(std::string_view p, std::string_view s) {
  std::size_t pi = 0, si = 0;
  std::size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size()) {
      char pc = p[pi];
      if (pc == '*') {
        star_p = ++pi;
        star_s = si;
        continue;
      }
      if (pc == '?') {
        ++pi;
        ++si;
        continue;
      }
      if (pc == '[') {
        std::size_t next = 0;
        if (class_matches(p, pi, s[si], next)) {
          pi = next;
          ++si;
          continue;
        }
      } else {
        if (pc == '\\' && pi + 1 < p.size()) pc = p[pi + 1];
        if (pc == s[si]) {
          pi += p[pi] == '\\' && pi + 1 < p.size() ? 2 : 1;
          ++si;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// Segments against path segments, `**` standing for any number of them: dynamic programming over
// (pattern segment, path segment), so a pattern of many `**` stays polynomial.
bool segments_match(const std::vector<std::string>& pat, const std::vector<std::string_view>& path) {
  const std::size_t n = pat.size(), m = path.size();
  // reach[j]: the first i pattern segments can match the first j path segments.
  std::vector<char> reach(m + 1, 0), next(m + 1, 0);
  reach[0] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    std::fill(next.begin(), next.end(), 0);
    if (pat[i] == "**") {
      bool any = false;
      for (std::size_t j = 0; j <= m; ++j) {
        any = any || reach[j];
        next[j] = any;
      }
    } else {
      for (std::size_t j = 0; j < m; ++j)
        if (reach[j] && segment_matches(pat[i], path[j])) next[j + 1] = 1;
    }
    reach.swap(next);
  }
  return reach[m];
}

} // namespace

GlobPattern::GlobPattern(std::string_view pattern) {
  if (pattern.empty()) throw ToolFailure("the pattern is empty");
  std::string_view p = pattern;
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  std::vector<std::string> expanded;
  expand_braces(p, expanded);
  for (const auto& e : expanded) {
    if (e.find('/') != std::string::npos) anchored_ = true;
    alternatives_.push_back(split_segments(e));
  }
  // Every class must be closed: said now, not at the first file that reaches it.
  for (const auto& alt : alternatives_)
    for (const auto& seg : alt)
      for (std::size_t i = 0; i < seg.size(); ++i) {
        if (seg[i] == '\\') ++i;
        else if (seg[i] == '[') {
          std::size_t next = 0;
          class_matches(seg, i, 'x', next);
          i = next - 1;
        }
      }
}

bool GlobPattern::matches(std::string_view path) const {
  std::vector<std::string_view> segs;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (i > start) segs.push_back(path.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!anchored_ && !segs.empty()) segs.erase(segs.begin(), segs.end() - 1);
  for (const auto& alt : alternatives_)
    if (segments_match(alt, segs)) return true;
  return false;
}

} // namespace acp::tools
