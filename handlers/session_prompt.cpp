#include "handlers/acp_editor.hpp"
#include "handlers/ask_user.hpp"
#include "handlers/compaction_card.hpp"
#include "handlers/message_id.hpp"
#include "handlers/permission_request.hpp"
#include "handlers/handlers.hpp"
#include "handlers/prompt_text.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/reference_card.hpp"
#include "handlers/replay.hpp"
#include "handlers/tool_card.hpp"
#include "handlers/slash_commands.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/text_frames.hpp"
#include "protocol/client_call.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/wire.hpp"
#include "store/event_model.hpp"
#include "support/log.hpp"

#include <algorithm>
#include <tuple>

namespace acp::handlers {

namespace {

protocol::StopReason to_stop_reason(llm::StopKind kind) {
  switch (kind) {
  case llm::StopKind::end_turn: return protocol::StopReason::end_turn;
  case llm::StopKind::max_tokens: return protocol::StopReason::max_tokens;
  case llm::StopKind::refusal: return protocol::StopReason::refusal;
  case llm::StopKind::cancelled: return protocol::StopReason::cancelled;
  case llm::StopKind::max_turn_requests: return protocol::StopReason::max_turn_requests;
  }
  return protocol::StopReason::end_turn;
}

// session/request_permission for one call; the answer read fail-closed, a withdrawn request `cancelled`.
boost::asio::awaitable<engine::PermissionAnswer> request_permission(HandlerContext* ctx, std::string session,
                                                                    boost::json::value params) {
  try {
    // The call in a local: its method-name temporary must not live across the co_await (GCC 12).
    auto asking = ctx->channel.call_client(session, "session/request_permission", std::move(params));
    boost::json::value result = co_await std::move(asking);
    co_return read_permission_answer(result);
  } catch (const protocol::ClientCallFailed& e) {
    log::warn("session/request_permission failed: " + std::string(e.what()) + ": the call is rejected");
    co_return engine::PermissionAnswer::reject_once;
  } catch (const protocol::ClientCallAborted&) {
    co_return engine::PermissionAnswer::cancelled;
  }
}

// What the turn reports becomes session/update notifications.
class UpdateSender final : public engine::TurnObserver {
public:
  UpdateSender(HandlerContext& ctx, std::string session_id, std::string cwd)
      : ctx_(ctx), id_(session_id), cwd_(cwd), frames_(session_id), cards_(ReplayPlaces{std::move(cwd), {}, session_id}) {}

  // Tool cards come from the records the turn logs, through the replay's own translation: what the
  // client sees live is what session/load shows later. Live adds the states between.
  void tool_record(const boost::json::object& record) override {
    std::vector<protocol::SessionUpdate> updates;
    cards_.on_event(record, updates);
    for (auto& update : updates) {
      if (auto* card = std::get_if<protocol::ToolCall>(&update)) card->status = protocol::ToolCallStatus::pending;
      send(std::move(update));
    }
  }
  void tool_running(const std::string& call_id, const std::optional<std::string>& terminal_id) override {
    protocol::ToolCallUpdate update;
    update.toolCallId = call_id;
    update.status = protocol::ToolCallStatus::in_progress;
    if (terminal_id) {
      update.content = std::vector<protocol::ToolCallContent>{protocol::ToolTerminal{*terminal_id}};
      cards_.attach_terminal(call_id, *terminal_id);  // the result card keeps it
    }
    send(std::move(update));
  }
  boost::asio::awaitable<engine::PermissionAnswer> ask_permission(const engine::PermissionQuestion& q) override {
    if (!ctx_.channel.has_client()) co_return engine::PermissionAnswer::cancelled;
    boost::json::value arguments = parse_arguments(nullptr);
    {
      boost::json::value raw(q.arguments);
      arguments = parse_arguments(&raw);
    }
    protocol::ToolCall card = tool_call_card(q.call_id, q.tool, arguments, cwd_);
    protocol::ToolCallUpdate asked;
    asked.toolCallId = card.toolCallId;
    asked.title = card.title;
    asked.kind = card.kind;
    asked.status = protocol::ToolCallStatus::pending;
    asked.locations = card.locations;
    asked.rawInput = card.rawInput;
    asked.content = card.content;  // the change the user is asked about, on the question itself
    // "Always" is offered only where it can be remembered, named after what it covers.
    boost::json::array options = permission_options(q.always ? &*q.always : nullptr);
    boost::json::value call = wire::encode(asked);
    call.as_object().erase("sessionUpdate");  // a ToolCallUpdate, not a session/update
    boost::json::object params{{"sessionId", id_}, {"toolCall", std::move(call)}, {"options", std::move(options)}};
    co_return co_await request_permission(&ctx_, id_, std::move(params));
  }
  bool can_ask_user() override { return ctx_.channel.has_client() && client_elicits_forms(ctx_.client_capabilities); }
  boost::asio::awaitable<engine::UserAnswer> ask_user(const engine::UserQuestion& q) override {
    auto asking = handlers::ask_user(ctx_, id_, q);
    co_return co_await std::move(asking);
  }
  std::shared_ptr<engine::Editor> editor() override { return acp_editor(ctx_, id_); }

  void references(std::int64_t snapshot_seq, const boost::json::object& source) override {
    // The card comes before any model output; the snapshot text itself never reaches the client.
    send(reference_card(snapshot_seq, source));
  }
  void title(const std::string& title) override {
    protocol::SessionInfoUpdate info;
    info.title = title;
    send(info);
  }
  void compacted(const engine::CompactionReport& report) override {
    send(compaction_card(report.checkpoint_seq, report.messages, report.summary));
  }
  void delta(const llm::Delta& delta) override { send_delta(delta, store::random_uuid()); }
  // The message id comes from the delta's place in the log, as replay derives it (message_id.hpp).
  void placed_delta(const llm::Delta& delta, const engine::DeltaPlace& place) override {
    const std::tuple<llm::DeltaKind, std::int64_t, std::int64_t, std::int64_t> at{delta.kind, place.turn, place.step,
                                                                                 place.block};
    if (!message_id_ || at != message_place_) {
      message_place_ = at;
      message_id_ = message_id(id_, block_place(delta.kind == llm::DeltaKind::text ? "text" : "reasoning", place.turn,
                                                place.step, place.block));
    }
    send_delta(delta, *message_id_);
  }

  // The context gauge after each model call; the tokens summed for the prompt's answer.
  void model_call(const engine::ModelCallUsage& call) override {
    protocol::TurnUsage& total = usage_ ? *usage_ : usage_.emplace();
    total.inputTokens += call.usage.input_tokens;
    total.outputTokens += call.usage.output_tokens;
    total.totalTokens = total.inputTokens + total.outputTokens;
    if (call.usage.reasoning_tokens) total.thoughtTokens = total.thoughtTokens.value_or(0) + *call.usage.reasoning_tokens;
    if (call.usage.cached_input_tokens)
      total.cachedReadTokens = total.cachedReadTokens.value_or(0) + *call.usage.cached_input_tokens;
    // The gauge needs the window's size: a model whose window nobody configured shows none.
    if (call.context_window && *call.context_window > 0)
      send(protocol::UsageUpdate{std::max<std::int64_t>(call.context_used, 0), *call.context_window, std::nullopt});
  }
  const std::optional<protocol::TurnUsage>& usage() const noexcept { return usage_; }

  boost::asio::awaitable<void> room() override {
    co_await ctx_.channel.room(id_);
  }

private:
  void send_delta(const llm::Delta& delta, const std::string& id) {
    std::string_view rest = delta.text;
    const std::size_t budget = frames_.text_budget();
    do {  // an empty delta is still one (empty) chunk
      const std::string_view piece = first_json_piece(rest, budget);
      rest.remove_prefix(piece.size());
      // Straight to the frame, as frame() of the same chunk would: no update built per delta.
      if (auto frame = frames_.frame_text(delta.kind == llm::DeltaKind::text ? 1 : 2, piece, id)) {
        ctx_.channel.notify_frame(id_, std::move(*frame));
        continue;
      }
      protocol::TextContent text{std::string(piece), std::nullopt, std::nullopt};
      if (delta.kind == llm::DeltaKind::text) send(protocol::AgentMessageChunk{std::move(text), id, std::nullopt});
      else send(protocol::AgentThoughtChunk{std::move(text), id, std::nullopt});
    } while (!rest.empty());
  }
  void send(protocol::SessionUpdate update) {
    if (auto frame = frames_.frame(update)) return ctx_.channel.notify_frame(id_, std::move(*frame));
    ctx_.channel.notify(protocol::SessionNotification{id_, std::move(update), std::nullopt});
  }
  HandlerContext& ctx_;
  std::string id_;
  std::string cwd_;
  TextChunkFrames frames_;  ///< most of a turn's frames are text deltas: written without JSON trees
  Replayer cards_;          ///< the tool records' cards, as session/load shows them
  std::optional<protocol::TurnUsage> usage_;  ///< none until a model call answered
  std::tuple<llm::DeltaKind, std::int64_t, std::int64_t, std::int64_t> message_place_{};
  std::optional<std::string> message_id_;  ///< of message_place_
};

// The prompt's work once it is first in line. (References: the caller's locals, alive while it waits.)
boost::asio::awaitable<protocol::PromptResponse> run_in_slot(HandlerContext& ctx, engine::QueueSlot& slot,
                                                             const engine::Turn& turn, RenderedPrompt& rendered,
                                                             const std::optional<SlashCommand>& command,
                                                             const std::optional<std::string>& unknown) {
  const std::shared_ptr<engine::Session> session = slot.session();
  // A command cancelled while it waited does nothing; a prompt still logs its message (below).
  if (turn.cancel_requested && (command || unknown))
    co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};
  if (command) co_return co_await run_slash_command(ctx, slot, *command);
  if (unknown) {
    // No model request and no log write: the user mistyped a command.
    ctx.channel.notify(protocol::SessionNotification{
        session->id,
        protocol::AgentMessageChunk{
            protocol::TextContent{describe_unknown_command(*unknown, offers_sharing(*session)), std::nullopt, std::nullopt},
            store::random_uuid(), std::nullopt},
        std::nullopt});
    co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
  }
  UpdateSender updates(ctx, session->id, session->cwd());
  engine::PromptInput input{std::move(rendered.text), std::move(rendered.references), std::move(rendered.images)};
  // The awaitable in a local: the moved-in input must not be a temporary across the co_await (GCC 12).
  // Failures reach the client through to_rpc_error (handlers/errors.cpp), like every handler's.
  auto running = ctx.engine.prompt(slot, std::move(input), updates);
  const llm::StopKind stop = co_await std::move(running);
  co_return protocol::PromptResponse{to_stop_reason(stop), std::nullopt, updates.usage()};
}

} // namespace

// A prompt sent while the session is busy waits in its queue and runs after the work that came
// before it (engine/work_queue.hpp): the prompt-turn page leaves this to the agent
// (https://agentclientprotocol.com/protocol/prompt-turn), and editors send the next prompt right
// after Stop. Malformed prompts are refused before they queue; a full queue answers QueueFull.
boost::asio::awaitable<protocol::PromptResponse> session_prompt(HandlerContext& ctx, protocol::PromptRequest req,
                                                                std::shared_ptr<engine::Turn> turn_in) {
  // Copied before the first suspension (GCC 12 and by-value coroutine parameters).
  std::shared_ptr<engine::Turn> turn = turn_in ? std::move(turn_in) : std::make_shared<engine::Turn>(ctx.executor);
  // Without a key nothing else matters: the client's answer to -32000 is authenticate.
  require_provider_key(ctx);
  // Behind a session/load or resume of this session still under way (a pipelining client).
  auto attaching = ctx.engine.attached(req.sessionId);
  const std::shared_ptr<engine::Session> session = co_await std::move(attaching);
  RenderedPrompt rendered = render_prompt(req.prompt);
  std::vector<protocol::ContentBlock>().swap(req.prompt);  // rendered: the blocks are not needed any more
  if (!rendered.images.empty()) {
    // Refused before anything is queued or logged: the user learns at once which model it was.
    const std::string model = ctx.engine.session_model(*session);
    if (!support::takes_images(ctx.config, model))
      throw jsonrpc::invalid_params("/prompt", "the model \"" + model + "\" (provider " + ctx.config.provider +
                                                   ") takes no images; choose a model that does" +
                                                   (ctx.config.provider == "openai" ? " or mark it imageInput in the configuration" : ""));
  }
  // A prompt with images is a message, never a command.
  std::optional<SlashCommand> command = rendered.images.empty() ? parse_slash_command(rendered.text) : std::nullopt;
  std::optional<std::string> unknown;
  if (!command && rendered.references.empty() && rendered.images.empty()) unknown = unknown_slash_command(rendered.text);
  // Someone else's session takes no writes: refused at once rather than after a wait in line.
  if (!unknown && (!command || command->name != "ref")) engine::require_writable(*session);
  std::size_t held = rendered.text.size();
  for (const auto& image : rendered.images) held += image.bytes.size();  // a waiting prompt holds its images too
  auto waiting = ctx.engine.enqueue(req.sessionId, turn, held);
  engine::QueueSlot slot = co_await std::move(waiting);
  std::exception_ptr failure;
  protocol::PromptResponse response;
  try {
    auto work = run_in_slot(ctx, slot, *turn, rendered, command, unknown);
    response = co_await std::move(work);
  } catch (...) {
    failure = std::current_exception();
  }
  // A mode chosen while this ran was left to it (engine::Engine::log_mode), also when it failed.
  co_await ctx.engine.log_mode(slot);
  if (failure) std::rethrow_exception(failure);
  co_return response;
}

} // namespace acp::handlers
