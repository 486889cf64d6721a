#include "handlers/blocking.hpp"
#include "handlers/conversation.hpp"
#include "handlers/handlers.hpp"
#include "handlers/prompt_text.hpp"
#include "handlers/turn_recorder.hpp"
#include "protocol/jsonrpc.hpp"
#include "store/session_store.hpp"
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
  std::shared_ptr<Turn> turn;
  ~TurnGuard() {
    if (SessionState* s = sessions.find(id); s && s->turn == turn) s->turn.reset();
  }
};

protocol::SessionNotification agent_chunk(const std::string& session_id, const llm::Delta& delta) {
  protocol::TextContent text{delta.text, std::nullopt, std::nullopt};
  protocol::SessionNotification note;
  note.sessionId = session_id;
  if (delta.kind == llm::DeltaKind::text) note.update = protocol::AgentMessageChunk{text, std::nullopt, std::nullopt};
  else note.update = protocol::AgentThoughtChunk{text, std::nullopt, std::nullopt};
  return note;
}

} // namespace

asio::awaitable<protocol::PromptResponse> session_prompt(HandlerContext& ctx, protocol::PromptRequest req) {
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!session) throw jsonrpc::resource_not_found(req.sessionId);
  if (session->turn) throw jsonrpc::invalid_params("/sessionId", "a prompt is already running in this session");
  std::string user_text = render_prompt_text(req.prompt);

  const std::string session_id = req.sessionId;
  auto turn = std::make_shared<Turn>();
  session->turn = turn;
  TurnGuard guard{ctx.sessions, session_id, turn};
  store::SessionHeader header = session->header;

  // Taking the session's write lock may wait for another process (up to 2 s): off this thread.
  auto open_writer = [&ctx, header] { return ctx.store().open_or_create(header); };
  TurnRecorder recorder(std::move(*co_await run_blocking(ctx, open_writer)));
  if (turn->cancel_requested) co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};

  session = ctx.sessions.find(session_id);
  if (!session) co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};
  if (session->history_seq != recorder.writer().next_seq()) {
    // Another process wrote this session (or it was repaired): rebuild the conversation from its surface.
    std::vector<llm::Message> history;
    if (recorder.writer().on_disk()) {
      auto read_surface = [&ctx, session_id] { return ctx.store().read_surface(session_id); };
      auto surface = co_await run_blocking(ctx, read_surface);
      append_surface_messages(surface->events, history);
    }
    session = ctx.sessions.find(session_id);
    if (!session) co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};
    session->history = std::move(history);
  }

  std::optional<std::string> title = recorder.begin({}, user_text);
  if (title) {
    protocol::SessionInfoUpdate info;
    info.title = *title;
    ctx.notify(protocol::SessionNotification{session_id, info, std::nullopt});
  }

  llm::Request request;
  request.model = ctx.config.model;
  request.messages.push_back({llm::Role::system, render_system_prompt(ctx.system_prompt_template, session->cwd)});
  request.messages.insert(request.messages.end(), session->history.begin(), session->history.end());
  request.messages.push_back({llm::Role::user, user_text});

  auto sink = [&ctx, &recorder, &turn, session_id](const llm::Delta& delta) {
    // Cancellation is racy: a delta arriving after cancel is dropped, never sent after the reply.
    if (turn->cancel_requested) return;
    recorder.delta(delta);
    ctx.notify(agent_chunk(session_id, delta));
  };

  llm::Completion completion;
  completion.provider = ctx.provider.name();
  completion.model = ctx.config.model;
  std::optional<std::string> failure, failure_code;
  std::exception_ptr provider_error;
  if (turn->cancel_requested) {
    completion.stop = llm::StopKind::cancelled;
  } else {
    try {
      completion = co_await asio::co_spawn(ctx.executor, ctx.provider.stream(request, sink),
                                           asio::bind_cancellation_slot(turn->signal.slot(), asio::use_awaitable));
    } catch (const llm::ProviderError& e) {
      failure = e.what();
      failure_code = e.code();
      provider_error = std::current_exception();
      if (e.output_started() && !turn->cancel_requested) {
        llm::Delta note{llm::DeltaKind::text, "\n\n[The answer was cut off: " + std::string(e.what()) + "]"};
        ctx.notify(agent_chunk(session_id, note));
      }
    } catch (...) {
      // After session/cancel the turn ends "cancelled" whatever the provider threw (ACP: never an error).
      if (!turn->cancel_requested) throw;
    }
    if (turn->cancel_requested) {
      failure.reset();
      failure_code.reset();
      provider_error = nullptr;
    }
  }
  if (turn->cancel_requested) completion.stop = llm::StopKind::cancelled;

  // The turn's last events are durable before the prompt is answered (contracts §4).
  auto finish = [&recorder, &completion, &failure, &failure_code] { recorder.finish(completion, failure, failure_code); };
  co_await run_blocking(ctx, finish);

  if (SessionState* s = ctx.sessions.find(session_id)) {
    s->history.push_back({llm::Role::user, user_text});
    if (completion.stop != llm::StopKind::cancelled && !failure && !recorder.answer_text().empty())
      s->history.push_back({llm::Role::assistant, recorder.answer_text()});
    s->history_seq = recorder.writer().next_seq();
  }
  if (provider_error) std::rethrow_exception(provider_error);
  co_return protocol::PromptResponse{to_stop_reason(completion.stop), std::nullopt};
}

} // namespace acp::handlers
