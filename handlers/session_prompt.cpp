#include "handlers/handlers.hpp"
#include "handlers/prompt_text.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/log.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace acp::handlers {

namespace asio = boost::asio;

namespace {

protocol::StopReason to_stop_reason(llm::StopKind kind) {
  switch (kind) {
  case llm::StopKind::end_turn: return protocol::StopReason::end_turn;
  case llm::StopKind::max_tokens: return protocol::StopReason::max_tokens;
  case llm::StopKind::refusal: return protocol::StopReason::refusal;
  case llm::StopKind::cancelled: return protocol::StopReason::cancelled;
  }
  return protocol::StopReason::end_turn;
}

// Releases the session's turn slot however the prompt ends.
struct TurnGuard {
  SessionRegistry& sessions;
  std::string id;
  ~TurnGuard() {
    if (SessionState* s = sessions.find(id)) s->turn.reset();
  }
};

} // namespace

asio::awaitable<protocol::PromptResponse> session_prompt(HandlerContext& ctx, protocol::PromptRequest req) {
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!session) throw jsonrpc::resource_not_found(req.sessionId);
  if (session->turn) throw jsonrpc::invalid_params("/sessionId", "a prompt is already running in this session");
  std::string user_text = render_prompt_text(req.prompt);

  auto turn = std::make_shared<Turn>();
  session->turn = turn;
  TurnGuard guard{ctx.sessions, req.sessionId};

  llm::Request request;
  request.model = ctx.config.model;
  request.messages.push_back({llm::Role::system, render_system_prompt(ctx.system_prompt_template, session->cwd)});
  for (const auto& m : session->history) request.messages.push_back(m);
  request.messages.push_back({llm::Role::user, user_text});

  std::string answer;
  std::string session_id = req.sessionId;
  auto sink = [&ctx, &answer, &turn, session_id](const llm::Delta& delta) {
    // Cancellation is racy: a delta arriving after cancel is dropped, never sent after the reply.
    if (turn->cancel_requested) return;
    protocol::SessionNotification note;
    note.sessionId = session_id;
    if (delta.kind == llm::DeltaKind::text) {
      answer += delta.text;
      note.update = protocol::AgentMessageChunk{protocol::TextContent{delta.text, std::nullopt, std::nullopt},
                                                std::nullopt, std::nullopt};
    } else {
      note.update = protocol::AgentThoughtChunk{protocol::TextContent{delta.text, std::nullopt, std::nullopt},
                                                std::nullopt, std::nullopt};
    }
    ctx.notify(note);
  };

  llm::Completion completion;
  if (turn->cancel_requested) {
    completion.stop = llm::StopKind::cancelled;
  } else {
    completion = co_await asio::co_spawn(ctx.executor, ctx.provider.stream(request, sink),
                                         asio::bind_cancellation_slot(turn->signal.slot(), asio::use_awaitable));
  }
  if (turn->cancel_requested) completion.stop = llm::StopKind::cancelled;

  // The session may have been touched while we awaited; look it up again.
  if (SessionState* s = ctx.sessions.find(session_id)) {
    s->history.push_back({llm::Role::user, user_text});
    if (!answer.empty()) s->history.push_back({llm::Role::assistant, answer});
  }
  co_return protocol::PromptResponse{to_stop_reason(completion.stop), std::nullopt};
}

} // namespace acp::handlers
