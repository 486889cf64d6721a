#include "handlers/blocking.hpp"
#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/session_lookup.hpp"
#include "store/session_store.hpp"
#include "support/log.hpp"

namespace acp::handlers {

boost::asio::awaitable<protocol::LoadSessionResponse> session_resume(HandlerContext& ctx,
                                                                     protocol::ResumeSessionRequest req) {
  store::SessionHeader header = co_await find_stored_session(ctx, req.sessionId, req.cwd);
  bool was_attached = ctx.sessions.find(req.sessionId) != nullptr;
  std::string logged_provider, logged_model;
  if (!was_attached && offers_models(ctx.config)) {
    // No replay, but the model choice is restored from the log's latest request/header. A log the
    // scan cannot finish still resumes, with the configured model.
    auto scan = [&ctx, id = req.sessionId, &logged_provider, &logged_model] {
      try {
        ctx.store().read_events(id, [&](boost::json::object&& e) { note_request_header(e, logged_provider, logged_model); });
      } catch (const std::exception& e) {
        log::warn("session/resume " + id + ": model not restored: " + e.what());
      }
    };
    co_await run_blocking(ctx, scan);
  }
  attach_session(ctx, header, req.additionalDirectories);
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!was_attached) restore_model(ctx.config, *session, logged_provider, logged_model);
  co_return protocol::LoadSessionResponse{model_config_options(ctx.config, *session), std::nullopt};
}

} // namespace acp::handlers
