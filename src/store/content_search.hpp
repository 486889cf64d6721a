// Recall by content (docs/recall.md): what was said in a store's sessions, searchable by words.
//
// Both backends index the same texts (indexable_texts) and search with the same terms
// (content_terms), so a question finds the same sessions in a file root (SQLite FTS5 under the
// cache directory, rebuilt from the logs, which stay the only truth) and in PostgreSQL (its own
// full-text search, under the same row security as the events). Scores are comparable within one
// store only.
#pragma once

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::store {

/// What part of a conversation a text is.
enum class TextKind { user, agent, tool_title, tool_result, summary };

/// Stable one-word names (index columns, search results): "user", "agent", "tool", "result", "summary".
std::string_view text_kind_name(TextKind kind) noexcept;

struct IndexableText {
  TextKind kind;
  std::string text;  ///< valid UTF-8
};

/// Tool results and single texts are cut to this many bytes (on a character boundary) before indexing:
/// what a tool printed is mostly noise for recall, and the index stays a fraction of the logs.
inline constexpr std::size_t kIndexedTextBytes = 4096;

/// The texts of one normalised event (event_model.hpp) worth finding its session by: the person's
/// messages (not injected context: reference snapshots, compaction checkpoints), the agent's text
/// (never its reasoning), a tool call's name and arguments, a tool result, a compaction summary.
/// Empty for every other event (chunks included: the finished assistant/message carries the text).
std::vector<IndexableText> indexable_texts(const boost::json::object& event);

/// The terms of a free-text question: words of letters and digits (any script), lower-cased in
/// en-US, at most 32 bytes each, English stop words and one-letter words dropped, duplicates
/// removed, at most 16 terms in order of first appearance. A session matches when it holds any
/// term; ranking rewards holding more of them and rarer ones.
std::vector<std::string> content_terms(std::string_view words);

/// Every word of `text` content_terms() would keep, in order, duplicates included, no count limit:
/// what an index that tokenises on its own side (PostgreSQL's tsvector) stores, so a question's
/// terms match it exactly.
std::vector<std::string> content_words(std::string_view text);

struct ContentQuery {
  std::string words;                 ///< the question as typed
  std::size_t limit = 10;            ///< sessions returned at most (> 0)
  std::vector<std::string> exclude;  ///< session ids never returned (the asking session)
};

/// One session that matched, at its best-matching event.
struct ContentHit {
  std::string session_id;
  std::int64_t seq = 0;    ///< the event whose text matched best
  TextKind kind = TextKind::user;
  std::string snippet;     ///< at most ~200 bytes of that text around the terms, valid UTF-8, one line
  double score = 0;        ///< higher is better
};

/// Progress of an index build: `done` of `total` sessions looked at so far.
struct IndexProgress {
  std::size_t done = 0, total = 0;
  std::size_t indexed = 0;  ///< of those, how many had lines to (re)index
};
using IndexProgressFn = std::function<void(const IndexProgress&)>;

/// A snippet of `text` around the first occurrence of any of `terms` (lower-cased), at most
/// `max_bytes`, whitespace runs folded to one space, cut on character boundaries with "…" where cut.
std::string make_snippet(std::string_view text, const std::vector<std::string>& terms, std::size_t max_bytes = 200);

} // namespace acp::store
