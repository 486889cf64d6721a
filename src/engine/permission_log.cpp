#include "engine/permission_log.hpp"

#include "engine/command_rule.hpp"
#include "store/fork_seed.hpp"

namespace acp::engine {

namespace json = boost::json;

store::NewEvent permission_rule_event(const PermissionRule& rule) {
  store::NewEvent e;
  e.type = std::string(kPermissionRuleEvent);
  e.data.reserve(3);
  e.data.emplace("tool", rule.tool);
  if (!rule.command_prefix.empty()) e.data.emplace("commandPrefix", rule.command_prefix);
  else if (!rule.command.empty()) e.data.emplace("command", rule.command);
  e.data.emplace("decision", rule.allow ? "allow" : "reject");
  e.ignorable = true;
  return e;
}

store::NewEvent mode_event(SessionMode mode) {
  store::NewEvent e;
  e.type = std::string(kModeEvent);
  e.data.emplace("mode", mode_id(mode));
  e.ignorable = true;
  return e;
}

bool restore_mode(const json::object& event, std::optional<SessionMode>& mode) {
  const json::value* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != kModeEvent) return false;
  const json::value* d = event.if_contains("data");
  const json::object* data = d ? d->if_object() : nullptr;
  const json::value* id = data ? data->if_contains("mode") : nullptr;
  if (!id || !id->is_string()) return false;
  std::optional<SessionMode> parsed = parse_mode(id->get_string());
  if (!parsed) return false;
  mode = parsed;
  return true;
}

bool drops_inherited_choices(const json::object& event) {
  const json::value* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != store::kForkEvent) return false;
  const json::value* d = event.if_contains("data");
  const json::object* data = d ? d->if_object() : nullptr;
  const json::value* inherits = data ? data->if_contains("inheritsChoices") : nullptr;
  return inherits && inherits->is_bool() && !inherits->get_bool();
}

namespace {

// A bash rule as the log states it, read under today's rules. An exact rule must be one that
// "always" could have written. A prefix is kept as one when it is a prefix offered today; the
// release before exact rules wrote any first word, or two when the second was plain (`rm`,
// `bash`, `./build.sh`, `ctest`, `git clean`), and such an allow covers only the command of those
// exact words now. A reject keeps its words as a prefix: refusing more than asked never runs anything.
bool read_command_rule(const json::value* prefix, const json::value* exact, PermissionRule& rule) {
  if (exact) {
    if (prefix || !exact->is_string()) return false;
    auto scope = command_scope(exact->get_string());
    if (!scope || scope->prefix || scope->text != exact->get_string()) return false;
    rule.command = std::move(scope->text);
    return true;
  }
  if (!prefix || !prefix->is_string()) return false;
  auto scope = command_scope(prefix->get_string());
  if (!scope) return false;
  if (offered_prefix(prefix->get_string()) || !rule.allow) rule.command_prefix = std::move(scope->text);
  else rule.command = std::move(scope->text);
  return true;
}

} // namespace

bool restore_permission_rule(const json::object& event, Permissions& permissions) {
  const json::value* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != kPermissionRuleEvent) return false;
  const json::value* d = event.if_contains("data");
  const json::object* data = d ? d->if_object() : nullptr;
  if (!data) return false;
  const json::value* tool = data->if_contains("tool");
  const json::value* decision = data->if_contains("decision");
  const json::value* prefix = data->if_contains("commandPrefix");
  const json::value* exact = data->if_contains("command");
  if (!tool || !tool->is_string() || tool->get_string().empty() || !decision || !decision->is_string()) return false;
  const json::string& verdict = decision->get_string();
  if (verdict != "allow" && verdict != "reject") return false;
  PermissionRule rule{std::string(tool->get_string()), {}, verdict == "allow", {}};
  if (rule.tool == "bash") {
    // Without a command or a prefix it would cover every simple command: never what was chosen.
    if (!read_command_rule(prefix, exact, rule)) return false;
  } else if (prefix || exact) {
    return false;
  }
  permissions.add(std::move(rule));
  return true;
}

} // namespace acp::engine
