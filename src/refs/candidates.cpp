#include "refs/candidates.hpp"

#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>

namespace acp::refs {

std::string lowercase_en_us(std::string_view text) {
  // ASCII-only text (session ids are UUIDs, most paths are ASCII) lowercases to A-Z → a-z under the
  // full mapping too; skipping ICU keeps a filter over thousands of sessions within milliseconds.
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) {
    std::string out(text);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  static const icu::Locale en_us("en", "US");
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  u.toLower(en_us);
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::vector<Candidate> select_candidates(const std::vector<store::SessionListing>& listings, const Target& target,
                                         std::string_view query, std::int64_t limit, bool match_titles) {
  const std::string needle = lowercase_en_us(query);
  struct Ranked {
    int rank;
    const store::SessionListing* listing;
  };
  std::vector<Ranked> ranked;
  for (const auto& listing : listings) {
    const auto& h = listing.header;
    if (h.id == target.id) continue;
    if (!needle.empty()) {
      bool hit = lowercase_en_us(h.id).find(needle) != std::string::npos ||
                 (h.cwd && lowercase_en_us(*h.cwd).find(needle) != std::string::npos) ||
                 (match_titles && listing.title && lowercase_en_us(*listing.title).find(needle) != std::string::npos);
      if (!hit) continue;
    }
    // Exact string equality, no path normalization: "/proj" and "/proj/" are different workspaces.
    int rank = (h.cwd && target.cwd && *h.cwd == *target.cwd) ? 0 : !h.cwd ? 1 : 2;
    ranked.push_back(Ranked{rank, &listing});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  if (static_cast<std::int64_t>(ranked.size()) > limit) ranked.resize(static_cast<std::size_t>(limit));

  std::vector<Candidate> out;
  out.reserve(ranked.size());
  for (const auto& r : ranked) {
    const auto& l = *r.listing;
    out.push_back(Candidate{l.header.id, l.title ? *l.title : l.header.id, l.header.cwd, l.header.createdAt});
  }
  return out;
}

} // namespace acp::refs
