// listCandidates (docs/session-references.md#candidates): limit check, cancellation check, one listing, selection.
#include "refs/candidates.hpp"
#include "refs/errors.hpp"
#include "refs/service.hpp"

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

} // namespace acp::refs
