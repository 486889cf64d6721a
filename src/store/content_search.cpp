#include "store/content_search.hpp"
#include "store/match_score.hpp"

#include "store/collation.hpp"
#include "support/utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include <unicode/uchar.h>

#include <algorithm>
#include <cmath>
#include <array>

namespace acp::store {

namespace json = boost::json;

std::string_view text_kind_name(TextKind kind) noexcept {
  switch (kind) {
  case TextKind::user: return "user";
  case TextKind::agent: return "agent";
  case TextKind::tool_title: return "tool";
  case TextKind::tool_result: return "result";
  case TextKind::summary: return "summary";
  }
  return "user";
}

namespace {

// Cut on a character boundary; the index never needs more of one text than this.
std::string bounded(std::string_view text) {
  if (text.size() > kIndexedTextBytes) text = text.substr(0, support::utf8_floor(text, kIndexedTextBytes));
  return support::valid_utf8_text(text);
}

const json::object* object_at(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_object() ? &it->value().get_object() : nullptr;
}

std::string_view string_at(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string_view(it->value().get_string()) : std::string_view{};
}

// The text blocks of a content array (or a bare string), joined by newlines; reasoning, tool calls
// and images are left out.
std::string text_of(const json::value* content) {
  std::string out;
  if (!content) return out;
  if (content->is_string()) return std::string(content->get_string());
  if (!content->is_array()) return out;
  for (const json::value& block : content->get_array()) {
    if (!block.is_object()) continue;
    const json::object& b = block.get_object();
    if (string_at(b, "type") != "text") continue;
    std::string_view t = string_at(b, "text");
    if (t.empty()) continue;
    if (!out.empty()) out += '\n';
    out.append(t);
    if (out.size() > kIndexedTextBytes) break;
  }
  return out;
}

void add(std::vector<IndexableText>& out, TextKind kind, std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
  out.push_back({kind, bounded(text)});
}

} // namespace

std::vector<IndexableText> indexable_texts(const json::object& event) {
  std::vector<IndexableText> out;
  std::string_view type = string_at(event, "type");
  const json::object* data = object_at(event, "data");
  if (!data) return out;
  if (type == "user/message" || type == "steering/message") {
    // Injected context (a reference snapshot, a compaction checkpoint) is someone else's words or a
    // summary indexed from compact/summary: only the person's own messages count.
    const json::object* source = object_at(*data, "source");
    if (source && string_at(*source, "kind") != "user") return out;
    add(out, TextKind::user, text_of(data->if_contains("content")));
  } else if (type == "assistant/message") {
    add(out, TextKind::agent, text_of(data->if_contains("content")));
  } else if (type == "tool/call") {
    std::string title(string_at(*data, "name"));
    std::string_view args = string_at(*data, "arguments");
    if (!args.empty()) title.append(" ").append(args);
    add(out, TextKind::tool_title, title);
  } else if (type == "tool/result") {
    add(out, TextKind::tool_result, text_of(data->if_contains("content")));
  } else if (type == "compact/summary") {
    add(out, TextKind::summary, text_of(data->if_contains("summary")));
  }
  return out;
}

namespace {

constexpr std::array<std::string_view, 96> kStopWords = {
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "done", "for", "from", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "last", "me", "my", "no", "not", "now", "of",
    "on", "or", "our", "out", "over", "she", "so", "some", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "up", "us", "was", "we", "week", "were",
    "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you", "your",
    "yesterday", "decide"};

bool stop_word(std::string_view w) {
  return std::find(kStopWords.begin(), kStopWords.end(), w) != kStopWords.end();
}

bool word_char(char32_t cp) { return cp == '_' || u_isalnum(static_cast<UChar32>(cp)); }

} // namespace

namespace {

// Calls fn with each kept word of `text` (see content_terms) until it returns false.
template <class Fn>
void each_word(std::string_view text, Fn&& fn) {
  constexpr std::size_t kMaxTermBytes = 32;
  std::string lowered = lowercase_en_us(text);
  std::string_view s = lowered;
  std::size_t i = 0;
  while (i < s.size()) {
    support::DecodedCodePoint d = support::decode_utf8(s, i);
    if (!d.valid || !word_char(d.cp)) {
      i += d.length;
      continue;
    }
    std::size_t start = i, letters = 0;
    while (i < s.size()) {
      d = support::decode_utf8(s, i);
      if (!d.valid || !word_char(d.cp)) break;
      i += d.length;
      ++letters;
    }
    std::string_view w = s.substr(start, i - start);
    if (w.size() > kMaxTermBytes) w = w.substr(0, support::utf8_floor(w, kMaxTermBytes));
    if (letters < 2 || stop_word(w)) continue;
    if (!fn(w)) return;
  }
}

} // namespace

std::vector<std::string> content_terms(std::string_view words) {
  constexpr std::size_t kMaxTerms = 16;
  std::vector<std::string> terms;
  each_word(words, [&](std::string_view w) {
    if (std::find(terms.begin(), terms.end(), w) == terms.end()) terms.emplace_back(w);
    return terms.size() < kMaxTerms;
  });
  return terms;
}

std::vector<std::string> content_words(std::string_view text) {
  std::vector<std::string> words;
  each_word(text, [&](std::string_view w) {
    words.emplace_back(w);
    return true;
  });
  return words;
}

double match_score(const std::string& lowered, const std::vector<std::string>& terms) {
  std::size_t distinct = 0, occurrences = 0;
  for (const std::string& t : terms) {
    std::size_t n = 0;
    for (std::size_t at = lowered.find(t); at != std::string::npos; at = lowered.find(t, at + t.size())) ++n;
    distinct += n > 0;
    occurrences += n;
  }
  return distinct == 0 ? 0 : static_cast<double>(distinct) + std::log1p(static_cast<double>(occurrences)) / 10;
}

std::string make_snippet(std::string_view text, const std::vector<std::string>& terms, std::size_t max_bytes) {
  std::string lowered = lowercase_en_us(text);
  // Lower-casing may change lengths (İ); the position is then approximate, which a snippet can afford.
  std::size_t hit = std::string_view::npos;
  for (const std::string& t : terms) hit = std::min(hit, lowered.find(t));
  hit = hit == std::string_view::npos ? 0 : std::min(hit, text.size());
  std::size_t begin = hit > max_bytes / 3 ? support::utf8_floor(text, hit - max_bytes / 3) : 0;
  std::size_t end = support::utf8_floor(text, std::min(text.size(), begin + max_bytes));
  std::string out;
  if (begin > 0) out += "…";
  bool space = false;
  for (std::size_t i = begin; i < end; ++i) {
    char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (end < text.size()) out += "…";
  return support::valid_utf8_text(out);
}

} // namespace acp::store
