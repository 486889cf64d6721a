// How well one text matches a question's terms, by counting: distinct terms matched count most,
// then how often they occur. The plain scan ranks sessions by it, and an index picks a matched
// document's event to show by it (content_search.cpp).
#pragma once

#include <string>
#include <vector>

namespace acp::store {

/// 0 when no term occurs in `lowered` (lower-cased text); else distinct terms + log1p(occurrences) / 10.
double match_score(const std::string& lowered, const std::vector<std::string>& terms);

} // namespace acp::store
