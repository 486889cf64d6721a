#include "handlers/slash_commands.hpp"

#include "handlers/compaction_card.hpp"
#include "handlers/session_modes.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/text_frames.hpp"

#include "support/iso_time.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace acp::handlers {

namespace {

std::string describe_row(const refs::Candidate& c) {
  std::string label = c.label.empty() ? c.session_id : c.label;
  return "\n- " + label + " (" + (c.cwd ? *c.cwd : std::string("no working directory")) + ", created " +
         support::iso_time(c.created_at) + ")";
}

} // namespace

std::string describe_candidates(const std::vector<refs::Candidate>& candidates, std::string_view query,
                                const std::vector<refs::ContentMatch>& by_content) {
  std::vector<const refs::ContentMatch*> more;  // content matches not already listed by id or title
  for (const auto& m : by_content)
    if (std::none_of(candidates.begin(), candidates.end(),
                     [&](const refs::Candidate& c) { return c.session_id == m.candidate.session_id; }))
      more.push_back(&m);
  if (candidates.empty() && more.empty())
    return query.empty() ? "No other sessions to reference yet."
                         : "No other session's id, working directory, title or conversation matches \"" +
                               std::string(query) + "\".";
  std::string out;
  if (!candidates.empty()) {
    out = "Sessions you can reference \u2014 paste a mention into your message:\n";
    for (const auto& c : candidates) out += describe_row(c) + "\n  " + refs::format_mention({c.session_id, c.label}) + "\n";
  }
  if (!more.empty()) {
    if (!out.empty()) out += "\n";
    out += "Sessions whose conversation matches \"" + std::string(query) +
           "\", best first (each mention centres its snapshot on the match):\n";
    for (const refs::ContentMatch* m : more) {
      const refs::Candidate& c = m->candidate;
      out += describe_row(c) + "\n  matched at seq " + std::to_string(m->seq) + " (" + m->kind + "): " + m->snippet +
             "\n  " + refs::format_mention({c.session_id, c.label, m->seq}) + "\n";
    }
  }
  return out;
}

namespace {

// Numbers with thousands separators: "12,345".
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// An agent message, in as many chunks as the frame limit needs (a long /ref list).
void send_text(HandlerContext& ctx, const std::string& session_id, std::string text) {
  protocol::AgentMessageChunk chunk{protocol::TextContent{std::move(text), std::nullopt, std::nullopt}, std::nullopt,
                                    std::nullopt};
  for_each_split(std::move(chunk), TextChunkFrames(session_id).text_budget(), [&](protocol::SessionUpdate&& piece) {
    ctx.channel.notify(protocol::SessionNotification{session_id, std::move(piece), std::nullopt});
  });
}

// The compaction card of /compact, sent as soon as the checkpoint is durable.
class CardSender final : public engine::TurnObserver {
public:
  CardSender(HandlerContext& ctx, std::string id) : ctx_(ctx), id_(std::move(id)) {}
  void references(std::int64_t, const boost::json::object&) override {}
  void title(const std::string&) override {}
  void delta(const llm::Delta&) override {}
  void compacted(const engine::CompactionReport& report) override {
    ctx_.channel.notify(protocol::SessionNotification{
        id_, compaction_card(report.checkpoint_seq, report.messages, report.summary), std::nullopt});
  }

private:
  HandlerContext& ctx_;
  std::string id_;
};

} // namespace

bool offers_sharing(const engine::Session& session) { return session.ownership.can_share && session.ownership.mine; }

std::string describe_unknown_command(const std::string& word, bool sharing) {
  std::string out = "Unknown command /" + word +
                    ". Commands:\n- /compact [focus] \u2014 condense the conversation so far into a summary now\n"
                    "- /ref [query] \u2014 list other sessions you can reference\n";
  if (sharing)
    out += "- /share \u2014 let people with access to this store see and reference this session\n"
           "- /unshare \u2014 stop sharing this session\n";
  return out + "To send text that starts with a slash to the model, start it with // or \"/ \".";
}

std::string describe_sharing(bool shared, const std::optional<std::string>& refused) {
  if (refused) {
    std::string why = *refused;
    if (!why.empty() && why.back() != '.') why += '.';
    return std::string(shared ? "Cannot share" : "Cannot unshare") + " this session: " + why;
  }
  return shared ? "Shared: people with access to this store can now see and reference this session."
                : "No longer shared.";
}

std::string describe_compaction(const engine::CompactResult& result) {
  using Kind = engine::CompactResult::Kind;
  const auto& r = result.report;
  switch (result.kind) {
  case Kind::compacted:
    return "Compacted " + grouped(static_cast<std::int64_t>(r.messages)) + " messages (" +
           grouped(static_cast<std::int64_t>(r.bytes)) + " bytes) into a summary. Estimated request size: " +
           grouped(r.tokens_before) + " \u2192 " + grouped(r.tokens_after) + " tokens.";
  case Kind::skipped: return "Nothing to compact: " + result.message + ".";
  case Kind::failed: return "Compaction failed: " + result.message + ". The conversation is unchanged.";
  case Kind::cancelled: return "Compaction cancelled. The conversation is unchanged.";
  }
  return {};
}

boost::asio::awaitable<protocol::PromptResponse> run_slash_command(HandlerContext& ctx, engine::QueueSlot& slot,
                                                                   const SlashCommand& command) {
  const std::shared_ptr<engine::Session> session = slot.session();
  const std::string session_id = session->id;
  if (command.name == "compact") {
    CardSender cards(ctx, session_id);
    engine::CompactResult result = co_await ctx.engine.compact(slot, command.argument, cards);
    if (result.kind == engine::CompactResult::Kind::cancelled)
      co_return protocol::PromptResponse{protocol::StopReason::cancelled, std::nullopt};
    send_text(ctx, session_id, describe_compaction(result));
    co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
  }
  if (command.name == "share" || command.name == "unshare") {
    const bool shared = command.name == "share";
    std::optional<std::string> refused = co_await ctx.engine.set_shared(session_id, shared);
    send_text(ctx, session_id, describe_sharing(shared, refused));
    // The `shared` option shows the new state (the change did not come through set_config_option).
    if (!refused && session->ownership.can_share)
      ctx.channel.notify(protocol::SessionNotification{
          session_id, protocol::ConfigOptionUpdate{session_config_options(ctx, *session), {}}, std::nullopt});
    co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
  }
  std::vector<refs::Candidate> candidates = co_await ctx.engine.candidates(*session, command.argument, std::nullopt, true);
  std::vector<refs::ContentMatch> by_content;
  if (!command.argument.empty())
    by_content = co_await ctx.engine.search_sessions(
        session.get(), command.argument, static_cast<std::size_t>(ctx.engine.references().config().candidate_limit));
  send_text(ctx, session_id, describe_candidates(candidates, command.argument, by_content));
  co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
}

namespace {

// /share and /unshare only where they can work (a store with people, the user's own session): a
// client shows every advertised command, and one that can only answer "cannot" is noise.
protocol::SessionNotification commands_update(const engine::Session& session) {
  protocol::AvailableCommandsUpdate update;
  update.availableCommands.push_back(protocol::AvailableCommand{
      "compact", "Condense the conversation so far into a summary now (frees context)",
      protocol::AvailableCommandInput{"optional focus: what the summary should keep"}});
  update.availableCommands.push_back(protocol::AvailableCommand{
      "ref", "List other sessions you can reference, with ready-to-paste @mentions",
      protocol::AvailableCommandInput{"optional filter: part of a session id, working directory or title"}});
  if (offers_sharing(session)) {
    update.availableCommands.push_back(protocol::AvailableCommand{
        "share", "Let people with access to this store see and reference this session", std::nullopt});
    update.availableCommands.push_back(protocol::AvailableCommand{"unshare", "Stop sharing this session", std::nullopt});
  }
  return protocol::SessionNotification{session.id, std::move(update), std::nullopt};
}

} // namespace

void advertise_commands_now(HandlerContext& ctx, const engine::Session& session) {
  ctx.channel.notify(commands_update(session));
}

void advertise_commands_after(HandlerContext& ctx, const engine::Session& session) {
  // Posted: the session/new answer is queued first, and the client learns the id from it.
  boost::asio::post(ctx.executor, [&ctx, note = commands_update(session)] { ctx.channel.notify(note); });
}

} // namespace acp::handlers
