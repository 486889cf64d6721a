#include "refs/mentions.hpp"

#include "refs/uri.hpp"
#include "support/text_class.hpp"
#include "support/utf8.hpp"

#include <optional>

namespace acp::refs {
namespace {

// Length of the UTF-8 sequence starting at text[i] and its code point (U+FFFD for a malformed one).
std::size_t next_code_point(std::string_view text, std::size_t i, char32_t& cp) {
  const auto decoded = support::decode_utf8(text, i);
  cp = decoded.cp;
  return decoded.length;
}

bool is_line_terminator(char32_t cp) { return cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029; }

bool is_base64url_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

struct Match {
  std::size_t end = 0;
  NormalizedReference reference;
};

// Alternative A at `start` (text[start] == '@'). Every construct is deterministic (the alternatives
// of the label group start with different characters, and `[^\s)]*` must stop at `)`), so a single
// greedy pass finds exactly what the backtracking regex would.
std::optional<Match> match_markdown(std::string_view text, std::size_t start) {
  std::size_t i = start + 1;
  if (i >= text.size() || text[i] != '[') return std::nullopt;
  ++i;
  std::string label;
  while (i < text.size() && text[i] != ']') {
    char32_t cp = 0;
    if (text[i] == '\\') {
      if (i + 1 >= text.size()) return std::nullopt;
      std::size_t len = next_code_point(text, i + 1, cp);
      if (is_line_terminator(cp)) return std::nullopt;  // `.` does not match a line terminator
      label.append(text.substr(i + 1, len));
      i += 1 + len;
    } else {
      std::size_t len = next_code_point(text, i, cp);
      label.append(text.substr(i, len));
      i += len;
    }
  }
  if (i >= text.size()) return std::nullopt;
  ++i;  // ']'
  if (i >= text.size() || text[i] != '(') return std::nullopt;
  ++i;
  if (text.substr(i, kSessionReferenceScheme.size()) != kSessionReferenceScheme) return std::nullopt;
  std::size_t uri_start = i;
  i += kSessionReferenceScheme.size();
  while (i < text.size() && text[i] != ')') {
    char32_t cp = 0;
    std::size_t len = next_code_point(text, i, cp);
    if (support::is_js_whitespace(cp)) return std::nullopt;
    i += len;
  }
  if (i >= text.size()) return std::nullopt;
  // Explicit mentions always decode; `#seq=N` is the one fragment accepted.
  ReferenceUri uri = decode_reference_uri(text.substr(uri_start, i - uri_start));
  return Match{i + 1, NormalizedReference{std::move(uri.session_id), std::move(label), uri.anchor_seq}};
}

// Alternative B at `start`: the scheme and one or more base64url characters, greedily.
std::optional<Match> match_bare(std::string_view text, std::size_t start) {
  if (text.substr(start, kSessionReferenceScheme.size()) != kSessionReferenceScheme) return std::nullopt;
  std::size_t i = start + kSessionReferenceScheme.size();
  std::size_t payload = i;
  while (i < text.size() && is_base64url_char(text[i])) ++i;
  if (i == payload) return std::nullopt;
  // An anchor is `#seq=` and the whole run of digits after it; anything else after the payload
  // (`#seq`, `#x`, `#seq=a`) stays text, as before anchors existed. A run that is no valid seq
  // (`#seq=01`) is refused like a non-canonical payload: the user clearly meant an anchor.
  if (text.substr(i, kAnchorPrefix.size()) == kAnchorPrefix) {
    std::size_t digits = i + kAnchorPrefix.size();
    std::size_t end = digits;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end > digits) {
      ReferenceUri uri = decode_reference_uri(text.substr(start, end - start));
      std::string label = uri.session_id;
      return Match{end, NormalizedReference{std::move(uri.session_id), std::move(label), uri.anchor_seq}};
    }
  }
  std::string id = decode_uri(text.substr(start, i - start));
  std::string label = id;
  return Match{i, NormalizedReference{std::move(id), std::move(label)}};
}

} // namespace

std::string format_mention(const SessionReference& reference) {
  const std::string& label = reference.label ? *reference.label : reference.session_id;
  std::string out = "@[";
  for (char c : label) {
    if (c == '\\' || c == ']') out.push_back('\\');
    out.push_back(c);
  }
  out += "](";
  out += encode_reference_uri(reference.session_id, reference.anchor_seq);
  out.push_back(')');
  return out;
}

ParsedText parse_text(std::string_view text) {
  ParsedText result;
  result.text.reserve(text.size());
  std::size_t i = 0;
  // Both alternatives begin with an ASCII byte ('@' or 'd'), which never occurs inside a multi-byte
  // UTF-8 sequence, so stepping byte by byte visits the same match starts as the Unicode regex.
  while (i < text.size()) {
    std::optional<Match> match;
    if (text[i] == '@') match = match_markdown(text, i);
    if (!match && text[i] == 'd') match = match_bare(text, i);
    if (!match) {
      result.text.push_back(text[i]);
      ++i;
      continue;
    }
    result.text.push_back('@');
    result.text += match->reference.label;
    result.references.push_back(std::move(match->reference));
    i = match->end;
  }
  return result;
}

} // namespace acp::refs
