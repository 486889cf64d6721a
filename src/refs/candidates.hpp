// Candidate sessions for a new mention (docs/session-references.md#candidates), served from the listing alone.
//
// Filters by case-insensitive substring of id or cwd (ICU full lowercase pinned to en-US, never the
// process locale) and, when asked (`/ref`, `matchTitles: true`), of the latest title; excludes the
// target, ranks same-cwd, then cwd-less, then everything else, keeping the listing's newest-first
// order within a rank, and labels rows by the latest title (an empty title stays empty) or the id.
// Message bodies are not searched; no log is read.
#pragma once

#include "refs/types.hpp"

#include "store/session_types.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace acp::refs {

/// JavaScript `toLocaleLowerCase('en-US')` of UTF-8 text via ICU (final sigma, İ → i̇, K → k).
std::string lowercase_en_us(std::string_view text);

/// The ranking and filtering step; `limit` must already be validated (> 0).
std::vector<Candidate> select_candidates(const std::vector<store::SessionListing>& listings, const Target& target,
                                         std::string_view query, std::int64_t limit, bool match_titles = false);

} // namespace acp::refs
