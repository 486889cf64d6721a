#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/errors.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::CandidatesResponse> dsh_session_reference_candidates(HandlerContext& ctx,
                                                                                       protocol::CandidatesRequest req) {
  auto session = ctx.engine.require(req.sessionId);
  std::vector<refs::Candidate> candidates;
  std::optional<refs::SessionReferenceError> invalid;
  try {
    candidates = co_await ctx.engine.candidates(*session, req.query.value_or(""), req.limit, req.matchTitles.value_or(false));
  } catch (const refs::SessionReferenceError& e) {
    // The only invalid input the service reads here is the limit: name it like every -32602.
    if (e.code() != refs::ErrorCode::invalid_reference) throw;
    invalid = e;
  }
  if (invalid) throw jsonrpc::invalid_params_code(invalid->code_name(), invalid->what(), "/limit");
  protocol::CandidatesResponse response;
  for (auto& c : candidates) {
    std::string uri = refs::encode_uri(c.session_id);
    std::string mention = refs::format_mention({c.session_id, c.label});
    response.candidates.push_back({c.session_id, c.label, c.cwd, c.created_at, std::move(uri), std::move(mention)});
  }
  co_return response;
}

} // namespace acp::handlers
