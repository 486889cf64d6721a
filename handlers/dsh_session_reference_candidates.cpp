#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::CandidatesResponse> dsh_session_reference_candidates(HandlerContext& ctx,
                                                                                       protocol::CandidatesRequest req) {
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!session) throw jsonrpc::resource_not_found(req.sessionId);
  refs::Target target{req.sessionId, session->header.cwd};
  auto list = [&ctx, target, query = req.query.value_or(""), limit = req.limit] {
    return ctx.references.list_candidates(target, query, limit);
  };
  std::vector<refs::Candidate> candidates = std::move(*co_await run_blocking(ctx, list));
  protocol::CandidatesResponse response;
  for (auto& c : candidates) {
    std::string uri = refs::encode_uri(c.session_id);
    std::string mention = refs::format_mention({c.session_id, c.label});
    response.candidates.push_back({c.session_id, c.label, c.cwd, c.created_at, std::move(uri), std::move(mention)});
  }
  co_return response;
}

} // namespace acp::handlers
