// listCandidates (docs/session-references.md#candidates): limit check, cancellation check, one listing, selection.
#include "refs/candidates.hpp"
#include "refs/errors.hpp"
#include "refs/service.hpp"

#include <unordered_map>

namespace acp::refs {

std::vector<Candidate> SessionReferenceService::list_candidates(const Target& target, std::string_view query,
                                                                const std::optional<boost::json::value>& limit,
                                                                std::stop_token stop, bool match_titles) const {
  std::int64_t effective = config_.candidate_limit;
  if (limit) {
    auto v = positive_safe_integer(*limit);
    if (!v)
      throw SessionReferenceError(ErrorCode::invalid_reference, "candidate limit must be a positive safe integer",
                                  "limit");
    effective = *v;
  }
  auto cancelled = [] {
    return SessionReferenceError(ErrorCode::cancelled, "session reference preparation was cancelled");
  };
  if (stop.stop_requested()) throw cancelled();
  std::vector<store::SessionListing> listings = source_->list_sessions();
  if (stop.stop_requested()) throw cancelled();  // the original races the listing against the signal
  return select_candidates(listings, target, query, effective, match_titles);
}

std::vector<ContentMatch> SessionReferenceService::search_content(const Target& target, std::string_view words,
                                                                 std::size_t limit, std::stop_token stop) const {
  std::vector<ContentMatch> out;
  if (limit == 0) return out;
  store::ContentQuery query{std::string(words), limit, {target.id}};
  std::vector<store::ContentHit> hits = source_->search_content(query, stop);
  if (hits.empty()) return out;
  std::unordered_map<std::string, const store::SessionListing*> listed;
  std::vector<store::SessionListing> listings = source_->list_sessions();
  for (const auto& l : listings) listed.emplace(l.header.id, &l);
  for (auto& hit : hits) {
    auto it = listed.find(hit.session_id);
    if (it == listed.end()) continue;
    const store::SessionListing& l = *it->second;
    out.push_back(ContentMatch{Candidate{l.header.id, l.title ? *l.title : l.header.id, l.header.cwd, l.header.createdAt},
                               l, hit.seq, std::string(store::text_kind_name(hit.kind)), std::move(hit.snippet)});
  }
  return out;
}

} // namespace acp::refs
