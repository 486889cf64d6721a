// The session's mode on the wire (https://agentclientprotocol.com/protocol/session-modes): `modes` in the session/new, load and
// resume answers, session/set_mode, and the same choice as the `mode` config option (category
// "mode") for clients that show only config options. The mode lives in engine::Session; a choice is
// logged (`dsh-acp/mode`, engine/permission_log.hpp), so a session loaded or resumed anew, in any
// process, comes back in it. A session whose log holds no choice starts in --default-mode (ask).
#pragma once

#include "handlers/handler_context.hpp"
#include "protocol/types/session.hpp"

#include <vector>

namespace acp::handlers {

inline constexpr const char* kModeOptionId = "mode";
/// "on" / "off": whether the session is shared (issue 17), offered where its store can share and
/// the session is the user's own.
inline constexpr const char* kSharedOptionId = "shared";

protocol::SessionModeState session_modes(const engine::Session& session);

/// Every config option of the session: the model (when the provider offers models), the mode, then
/// `shared` (when offered).
std::vector<protocol::SessionConfigOption> session_config_options(const HandlerContext& ctx,
                                                                  const engine::Session& session);

/// Switches the mode and tells the client (`current_mode_update`; `config_option_update` too when
/// `announce_options`: the change did not come through session/set_config_option, whose answer
/// already carries the options). Setting the current mode again changes and sends nothing. The caller
/// logs the choice (engine::Engine::log_mode).
void switch_mode(HandlerContext& ctx, engine::Session& session, engine::SessionMode mode, bool announce_options);

} // namespace acp::handlers
