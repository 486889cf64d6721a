#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/config.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"

#include <unordered_set>

namespace acp::handlers {

boost::asio::awaitable<protocol::CandidatesResponse> dsh_session_reference_candidates(HandlerContext& ctx,
                                                                                       protocol::CandidatesRequest req) {
  auto session = ctx.engine.require(req.sessionId);
  // An invalid limit is a reference error naming its parameter: to_rpc_error makes it -32602 with
  // data.path "/limit", like every other.
  std::vector<refs::Candidate> candidates =
      co_await ctx.engine.candidates(*session, req.query.value_or(""), req.limit, req.matchTitles.value_or(false));
  protocol::CandidatesResponse response;
  std::unordered_set<std::string> listed;
  for (auto& c : candidates) {
    std::string uri = refs::encode_uri(c.session_id);
    std::string mention = refs::format_mention({c.session_id, c.label});
    listed.insert(c.session_id);
    response.candidates.push_back({c.session_id, c.label, c.cwd, c.created_at, std::move(uri), std::move(mention), {}});
  }
  // By content: after the id/cwd/title matches, which are exact, up to the same limit.
  // (A bad limit was refused above.)
  const std::size_t limit = static_cast<std::size_t>(
      (req.limit ? refs::positive_safe_integer(*req.limit) : std::nullopt).value_or(ctx.engine.references().config().candidate_limit));
  const std::string query = req.query.value_or("");
  if (req.matchContent.value_or(false) && !query.empty() && response.candidates.size() < limit) {
    std::vector<refs::ContentMatch> found = co_await ctx.engine.search_sessions(session.get(), query, limit);
    for (auto& m : found) {
      if (response.candidates.size() >= limit) break;
      if (!listed.insert(m.candidate.session_id).second) continue;
      const refs::Candidate& c = m.candidate;
      response.candidates.push_back({c.session_id, c.label, c.cwd, c.created_at, refs::encode_uri(c.session_id),
                                     refs::format_mention({c.session_id, c.label, m.seq}),
                                     protocol::ContentMatchInfo{m.seq, std::move(m.kind), std::move(m.snippet)}});
    }
  }
  co_return response;
}

} // namespace acp::handlers
