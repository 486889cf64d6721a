#include "engine/permissions.hpp"

#include "engine/command_rule.hpp"

#include <boost/json/array.hpp>

namespace acp::engine {

namespace json = boost::json;

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

json::array permission_options(const PermissionRule* always) {
  auto option = [](std::string_view id, std::string name) {
    return json::object{{"optionId", id}, {"name", std::move(name)}, {"kind", id}};
  };
  if (!always) return json::array{option("allow_once", "Allow"), option("reject_once", "Reject")};
  const std::string scope = rule_scope_name(*always);
  return json::array{option("allow_once", "Allow"), option("allow_always", "Always allow " + scope),
                     option("reject_once", "Reject"), option("reject_always", "Always reject " + scope)};
}

PermissionAnswer read_permission_answer(const json::value& result) {
  const json::object* r = result.if_object();
  const json::value* o = r ? r->if_contains("outcome") : nullptr;
  const json::object* outcome = o ? o->if_object() : nullptr;
  const json::value* kind = outcome ? outcome->if_contains("outcome") : nullptr;
  if (kind && kind->is_string() && kind->get_string() == "cancelled") return PermissionAnswer::cancelled;
  const json::value* id = outcome ? outcome->if_contains("optionId") : nullptr;
  if (!kind || !kind->is_string() || kind->get_string() != "selected" || !id || !id->is_string())
    return PermissionAnswer::reject_once;
  std::string_view option = id->get_string();
  if (option == "allow_once") return PermissionAnswer::allow_once;
  if (option == "allow_always") return PermissionAnswer::allow_always;
  if (option == "reject_always") return PermissionAnswer::reject_always;
  return PermissionAnswer::reject_once;
}

} // namespace acp::engine
