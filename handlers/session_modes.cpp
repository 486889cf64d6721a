#include "handlers/session_modes.hpp"

#include "handlers/model_option.hpp"

namespace acp::handlers {

namespace {

struct ModeText {
  engine::SessionMode mode;
  const char* name;
  const char* description;
};

constexpr ModeText kModes[] = {
    {engine::SessionMode::ask, "Ask", "Reads run freely; writes, edits, commands and MCP tools ask for permission"},
    {engine::SessionMode::read_only, "Read-only", "Writes, edits, commands and MCP tools are refused without asking"},
    {engine::SessionMode::auto_approve, "Auto", "Nothing is asked; files stay confined to the session's directories"},
};

} // namespace

protocol::SessionModeState session_modes(const engine::Session& session) {
  protocol::SessionModeState state;
  state.currentModeId = engine::mode_id(session.mode);
  for (const auto& m : kModes)
    state.availableModes.push_back(protocol::SessionMode{std::string(engine::mode_id(m.mode)), m.name, m.description, {}});
  return state;
}

std::vector<protocol::SessionConfigOption> session_config_options(const HandlerContext& ctx,
                                                                  const engine::Session& session) {
  std::vector<protocol::SessionConfigOption> options = model_config_options(ctx, session).value_or(
      std::vector<protocol::SessionConfigOption>{});
  protocol::SessionConfigOption option;
  option.id = kModeOptionId;
  option.name = "Mode";
  option.description = "What the agent's tools may do without asking";
  option.category = "mode";
  option.type = "select";
  option.currentValue = engine::mode_id(session.mode);
  for (const auto& m : kModes)
    option.options.push_back(
        protocol::SessionConfigSelectOption{std::string(engine::mode_id(m.mode)), m.name, m.description, {}});
  options.push_back(std::move(option));
  // Sharing, where the session's store has people and the session is the user's to share.
  if (session.ownership.can_share && session.ownership.mine) {
    protocol::SessionConfigOption shared;
    shared.id = kSharedOptionId;
    shared.name = "Shared";
    shared.description = "Whether people with access to this store can see and reference this session";
    shared.type = "select";
    shared.currentValue = session.ownership.shared ? "on" : "off";
    shared.options.push_back(
        protocol::SessionConfigSelectOption{"on", "Shared", "Others with access to the store can see it", {}});
    shared.options.push_back(protocol::SessionConfigSelectOption{"off", "Private", "Only you can see it", {}});
    options.push_back(std::move(shared));
  }
  return options;
}

void switch_mode(HandlerContext& ctx, engine::Session& session, engine::SessionMode mode, bool announce_options) {
  if (session.mode == mode) return;
  session.mode = mode;
  session.mode_unlogged = true;
  ctx.channel.notify(protocol::SessionNotification{
      session.id, protocol::CurrentModeUpdate{std::string(engine::mode_id(mode)), {}}, std::nullopt});
  if (announce_options)
    ctx.channel.notify(protocol::SessionNotification{
        session.id, protocol::ConfigOptionUpdate{session_config_options(ctx, session), {}}, std::nullopt});
}

} // namespace acp::handlers
