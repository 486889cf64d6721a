// Slash commands (ACP's only agent-fed picker, https://agentclientprotocol.com/protocol/slash-commands).
//
// `/ref [query]` answers with the sessions the user may reference and ready-to-paste mentions,
// without a model request and without writing to the session log. `/compact [focus]` condenses the
// conversation now (a turn of its own in the log) and answers with what it condensed. `/share` and
// `/unshare` mark the session shared or not in its store (no log record; a store without people
// answers why it cannot, and they are advertised only where they can work). Writing commands in someone else's session are refused (-32602). Any other
// `/word` answers with the list of commands (no model request, no log write). Commands are advertised
// (available_commands_update, https://agentclientprotocol.com/protocol/slash-commands) before the
// answer to session/load and resume, whose client knows the id already, so nothing of a load
// follows its answer (https://agentclientprotocol.com/protocol/session-setup#loading-sessions), and
// right after the answer to session/new, which tells the client the id.
#pragma once

#include "handlers/handler_context.hpp"
#include "handlers/slash_command_text.hpp"
#include "protocol/types/session.hpp"
#include "refs/types.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

namespace acp::handlers {

/// Runs a command in the queue slot its prompt holds.
boost::asio::awaitable<protocol::PromptResponse> run_slash_command(HandlerContext& ctx, engine::QueueSlot& slot,
                                                                   const SlashCommand& command);

/// Whether /share and /unshare can work in the session: its store has people and it is the user's.
bool offers_sharing(const engine::Session& session);

/// The answer to an unknown `/word`; /share and /unshare listed when `sharing`.
std::string describe_unknown_command(const std::string& word, bool sharing);

/// The answer to `/share` (`shared`) or `/unshare`: done, or why the store cannot (`refused`).
std::string describe_sharing(bool shared, const std::optional<std::string>& refused);

/// The answer to `/compact`.
std::string describe_compaction(const engine::CompactResult& result);

/// Queues available_commands_update for the session now (before the current answer).
void advertise_commands_now(HandlerContext& ctx, const engine::Session& session);
/// Queues available_commands_update for the session after the current answer (session/new).
void advertise_commands_after(HandlerContext& ctx, const engine::Session& session);

/// The candidates answer as text (exposed for tests).
std::string describe_candidates(const std::vector<refs::Candidate>& candidates, std::string_view query,
                                const std::vector<refs::ContentMatch>& by_content = {});

} // namespace acp::handlers
