#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::CandidatesResponse> dsh_session_reference_candidates(HandlerContext& ctx,
                                                                                       protocol::CandidatesRequest req) {
  auto session = ctx.engine.require(req.sessionId);
  // An invalid limit is a reference error naming its parameter: to_rpc_error makes it -32602 with
  // data.path "/limit", like every other.
  std::vector<refs::Candidate> candidates =
      co_await ctx.engine.candidates(*session, req.query.value_or(""), req.limit, req.matchTitles.value_or(false));
  protocol::CandidatesResponse response;
  for (auto& c : candidates) {
    std::string uri = refs::encode_uri(c.session_id);
    std::string mention = refs::format_mention({c.session_id, c.label});
    response.candidates.push_back({c.session_id, c.label, c.cwd, c.created_at, std::move(uri), std::move(mention)});
  }
  co_return response;
}

} // namespace acp::handlers
