#include "handlers/compaction_card.hpp"
#include "handlers/handlers.hpp"
#include "handlers/prompt_text.hpp"
#include "handlers/provider_auth.hpp"
#include "handlers/reference_card.hpp"
#include "handlers/slash_commands.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/text_frames.hpp"
#include "protocol/jsonrpc.hpp"

namespace acp::handlers {

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

// What the turn reports becomes session/update notifications.
class UpdateSender final : public engine::TurnObserver {
public:
  UpdateSender(HandlerContext& ctx, std::string session_id) : ctx_(ctx), id_(session_id), frames_(std::move(session_id)) {}

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
  void delta(const llm::Delta& delta) override {
    std::string_view rest = delta.text;
    const std::size_t budget = frames_.text_budget();
    do {  // an empty delta is still one (empty) chunk
      const std::string_view piece = first_json_piece(rest, budget);
      rest.remove_prefix(piece.size());
      protocol::TextContent text{std::string(piece), std::nullopt, std::nullopt};
      if (delta.kind == llm::DeltaKind::text) send(protocol::AgentMessageChunk{std::move(text), std::nullopt, std::nullopt});
      else send(protocol::AgentThoughtChunk{std::move(text), std::nullopt, std::nullopt});
    } while (!rest.empty());
  }

  boost::asio::awaitable<void> room() override {
    if (ctx_.room) co_await ctx_.room(id_);
  }

private:
  void send(protocol::SessionUpdate update) {
    if (ctx_.notify_frame) {
      if (auto frame = frames_.frame(update)) return ctx_.notify_frame(id_, std::move(*frame));
    }
    ctx_.notify(protocol::SessionNotification{id_, std::move(update), std::nullopt});
  }
  HandlerContext& ctx_;
  std::string id_;
  TextChunkFrames frames_;  ///< most of a turn's frames are text deltas: written without JSON trees
};

} // namespace

boost::asio::awaitable<protocol::PromptResponse> session_prompt(HandlerContext& ctx, protocol::PromptRequest req) {
  // Without a key nothing else matters: the client's answer to -32000 is authenticate.
  require_provider_key(ctx);
  auto session = ctx.engine.require(req.sessionId);
  if (session->turn) throw jsonrpc::invalid_params("/sessionId", "a prompt is already running in this session");
  RenderedPrompt rendered = render_prompt(req.prompt);
  std::vector<protocol::ContentBlock>().swap(req.prompt);  // rendered: the blocks are not needed any more
  if (auto command = parse_slash_command(rendered.text)) co_return co_await run_slash_command(ctx, req.sessionId, *command);
  if (auto word = unknown_slash_command(rendered.text); word && rendered.references.empty()) {
    // No model request and no log write: the user mistyped a command.
    ctx.notify(protocol::SessionNotification{
        req.sessionId,
        protocol::AgentMessageChunk{protocol::TextContent{describe_unknown_command(*word), std::nullopt, std::nullopt},
                                    std::nullopt, std::nullopt},
        std::nullopt});
    co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
  }
  UpdateSender updates(ctx, req.sessionId);
  engine::PromptInput input{std::move(rendered.text), std::move(rendered.references)};
  // The awaitable in a local: the moved-in input must not be a temporary across the co_await (GCC 12).
  // Failures reach the client through to_rpc_error (handlers/errors.cpp), like every handler's.
  auto running = ctx.engine.prompt(req.sessionId, std::move(input), updates);
  const llm::StopKind stop = co_await std::move(running);
  co_return protocol::PromptResponse{to_stop_reason(stop), std::nullopt};
}

} // namespace acp::handlers
