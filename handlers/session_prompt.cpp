#include "handlers/blocking.hpp"
#include "handlers/conversation.hpp"
#include "handlers/handlers.hpp"
#include "handlers/model_option.hpp"
#include "handlers/prompt_text.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/reference_card.hpp"
#include "handlers/slash_commands.hpp"
#include "handlers/turn_recorder.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/errors.hpp"
#include "refs/service.hpp"
#include "store/event_builders.hpp"
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
  // Without a key nothing else matters: the client's answer to -32000 is authenticate.
  require_provider_key(ctx);
  SessionState* session = ctx.sessions.find(req.sessionId);
  if (!session) throw jsonrpc::resource_not_found(req.sessionId);
  if (session->turn) throw jsonrpc::invalid_params("/sessionId", "a prompt is already running in this session");
  RenderedPrompt rendered = render_prompt(req.prompt);
  if (auto command = parse_slash_command(rendered.text)) co_return co_await run_slash_command(ctx, req.sessionId, *command);
  const std::string user_text = rendered.text;

  const std::string session_id = req.sessionId;
  auto turn = std::make_shared<Turn>();
  session->turn = turn;
  TurnGuard guard{ctx.sessions, session_id, turn};
  store::SessionHeader header = session->header;

  // References are prepared before anything is written: a failure or a cancel leaves no trace.
  std::optional<refs::AdditionalContext> context;
  if (!rendered.references.empty()) {
    refs::Target target{session_id, header.cwd};
    boost::json::array content{boost::json::object{{"type", "text"}, {"text", user_text}}};
    auto prepare = [&ctx, target, content, &rendered, stop = turn->stop.get_token()] {
      return ctx.references.prepare(target, content, rendered.references, stop);
    };
    try {
      std::optional<refs::PreparedMessage> prepared = co_await run_blocking(ctx, prepare);
      context = std::move(prepared->additional_context);
    } catch (const refs::SessionReferenceError& e) {
      if (e.code() != refs::ErrorCode::cancelled && !turn->cancel_requested) throw;
    }
    if (turn->cancel_requested) co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};
  }

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

  // The snapshot, turn/start and the direct message go to the log as one batch (contracts §4).
  std::vector<store::NewEvent> prefix;
  std::int64_t snapshot_seq = recorder.writer().next_seq();
  if (context) {
    boost::json::array snapshot_content{boost::json::object{{"type", "text"}, {"text", context->prompt}}};
    prefix.push_back(store::events::user_message(std::move(snapshot_content), context->source));
  }
  // The session's model choice; a change since the log's latest request/header is logged after step/start.
  const std::string model = session_model(ctx.config, *session);
  if (auto model_header = request_header_event(*session, ctx.provider.name(), model)) {
    recorder.request_header(std::move(*model_header));
    session->logged_provider = ctx.provider.name();
    session->logged_model = model;
  }
  std::optional<std::string> title = recorder.begin(std::move(prefix), user_text);
  if (context) {
    // The card comes before any model output; the snapshot text itself never reaches the client.
    ctx.notify(protocol::SessionNotification{session_id, reference_card(snapshot_seq, context->source), std::nullopt});
  }
  if (title) {
    protocol::SessionInfoUpdate info;
    info.title = *title;
    ctx.notify(protocol::SessionNotification{session_id, info, std::nullopt});
  }

  llm::Request request;
  request.model = model;
  request.messages.push_back({llm::Role::system, render_system_prompt(ctx.system_prompt_template, session->cwd)});
  request.messages.insert(request.messages.end(), session->history.begin(), session->history.end());
  // Two consecutive user-role messages: the untrusted snapshot first, then the direct message.
  if (context) request.messages.push_back({llm::Role::user, context->prompt});
  request.messages.push_back({llm::Role::user, user_text});

  auto sink = [&ctx, &recorder, &turn, session_id](const llm::Delta& delta) {
    // Cancellation is racy: a delta arriving after cancel is dropped, never sent after the reply.
    if (turn->cancel_requested) return;
    recorder.delta(delta);
    ctx.notify(agent_chunk(session_id, delta));
  };

  llm::Completion completion;
  completion.provider = ctx.provider.name();
  completion.model = model;
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
      // 401/403: the wire error names the provider (contracts §2), the log keeps the provider's message.
      if (e.code() == "AUTH_REQUIRED") provider_error = std::make_exception_ptr(jsonrpc::auth_required(ctx.provider.name()));
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
    if (context) s->history.push_back({llm::Role::user, context->prompt});
    s->history.push_back({llm::Role::user, user_text});
    if (completion.stop != llm::StopKind::cancelled && !failure && !recorder.answer_text().empty())
      s->history.push_back({llm::Role::assistant, recorder.answer_text()});
    s->history_seq = recorder.writer().next_seq();
  }
  if (provider_error) std::rethrow_exception(provider_error);
  co_return protocol::PromptResponse{to_stop_reason(completion.stop), std::nullopt};
}

} // namespace acp::handlers
