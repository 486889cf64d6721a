#include "engine/permissions.hpp"

#include "engine/command_rule.hpp"

namespace acp::engine {

std::string_view mode_id(SessionMode mode) {
  switch (mode) {
    case SessionMode::read_only: return "read-only";
    case SessionMode::auto_approve: return "auto";
    case SessionMode::ask: break;
  }
  return "ask";
}

std::optional<SessionMode> parse_mode(std::string_view id) {
  if (id == "ask") return SessionMode::ask;
  if (id == "read-only") return SessionMode::read_only;
  if (id == "auto") return SessionMode::auto_approve;
  return std::nullopt;
}

std::optional<PermissionRule> Permissions::rule_for(std::string_view tool, std::string_view command,
                                                    std::string_view workdir, bool allow) {
  PermissionRule rule{std::string(tool), {}, allow, {}};
  if (tool != "bash") return rule;
  auto scope = command_scope(command, workdir);
  if (!scope) return std::nullopt;
  (scope->prefix ? rule.command_prefix : rule.command) = std::move(scope->text);
  return rule;
}

const PermissionRule* Permissions::match(std::string_view tool, std::string_view command, std::string_view workdir) const {
  const PermissionRule* found = nullptr;
  for (const auto& r : rules_) {
    if (r.tool != tool) continue;
    if (tool == "bash") {
      const bool prefix = r.command.empty();
      if (!scope_covers(CommandScope{prefix, prefix ? r.command_prefix : r.command}, command, workdir)) continue;
    }
    found = &r;  // the latest choice wins
  }
  return found;
}

PermissionNeed Permissions::check(SessionMode mode, std::string_view tool, ToolEffect effect, std::string_view command,
                                  std::string_view workdir) const {
  if (effect == ToolEffect::none) return PermissionNeed::allowed;
  if (mode == SessionMode::read_only) return PermissionNeed::refused;
  if (mode == SessionMode::auto_approve) return PermissionNeed::allowed;
  if (const PermissionRule* r = match(tool, command, workdir)) return r->allow ? PermissionNeed::allowed : PermissionNeed::refused;
  return PermissionNeed::ask;
}

bool Permissions::remember(std::string_view tool, std::string_view command, bool allow) {
  auto rule = rule_for(tool, command, {}, allow);
  if (!rule) return false;
  rules_.push_back(std::move(*rule));
  return true;
}

std::string rule_scope_name(const PermissionRule& rule) {
  if (!rule.command.empty()) return "`" + rule.command + "`";
  if (!rule.command_prefix.empty()) return "`" + rule.command_prefix + " \u2026`";
  return "every `" + rule.tool + "` call";
}

} // namespace acp::engine
