#include "handlers/slash_commands.hpp"

#include "support/iso_time.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"

#include <boost/asio/post.hpp>

namespace acp::handlers {

std::string describe_candidates(const std::vector<refs::Candidate>& candidates, std::string_view query) {
  if (candidates.empty())
    return query.empty() ? "No other sessions to reference yet."
                         : "No other session's id, working directory or title matches \"" + std::string(query) + "\".";
  std::string out = "Sessions you can reference \u2014 paste a mention into your message:\n";
  for (const auto& c : candidates) {
    std::string label = c.label.empty() ? c.session_id : c.label;
    out += "\n- " + label + " (" + (c.cwd ? *c.cwd : std::string("no working directory")) + ", created " +
           support::iso_time(c.created_at) + ")\n  " + refs::format_mention({c.session_id, c.label}) + "\n";
  }
  return out;
}

boost::asio::awaitable<protocol::PromptResponse> run_slash_command(HandlerContext& ctx, const std::string& session_id,
                                                                   const SlashCommand& command) {
  auto session = ctx.engine.require(session_id);
  std::vector<refs::Candidate> candidates = co_await ctx.engine.candidates(*session, command.argument, std::nullopt, true);
  protocol::SessionNotification note;
  note.sessionId = session_id;
  note.update = protocol::AgentMessageChunk{
      protocol::TextContent{describe_candidates(candidates, command.argument), std::nullopt, std::nullopt}, std::nullopt,
      std::nullopt};
  ctx.notify(note);
  co_return protocol::PromptResponse{protocol::StopReason::end_turn, std::nullopt};
}

void advertise_commands(HandlerContext& ctx, const std::string& session_id) {
  protocol::AvailableCommandsUpdate update;
  update.availableCommands.push_back(protocol::AvailableCommand{
      "ref", "List other sessions you can reference, with ready-to-paste @mentions",
      protocol::AvailableCommandInput{"optional filter: part of a session id, working directory or title"}});
  // Posted, so the client has the session/new (or load) answer before the update that names it.
  boost::asio::post(ctx.executor, [&ctx, note = protocol::SessionNotification{session_id, update, std::nullopt}] {
    ctx.notify(note);
  });
}

} // namespace acp::handlers
