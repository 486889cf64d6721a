#include "engine/permission_log.hpp"

namespace acp::engine {

namespace json = boost::json;

store::NewEvent permission_rule_event(const PermissionRule& rule) {
  store::NewEvent e;
  e.type = std::string(kPermissionRuleEvent);
  e.data.reserve(3);
  e.data.emplace("tool", rule.tool);
  if (!rule.command_prefix.empty()) e.data.emplace("commandPrefix", rule.command_prefix);
  e.data.emplace("decision", rule.allow ? "allow" : "reject");
  e.ignorable = true;
  return e;
}

bool restore_permission_rule(const json::object& event, Permissions& permissions) {
  const json::value* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != kPermissionRuleEvent) return false;
  const json::value* d = event.if_contains("data");
  const json::object* data = d ? d->if_object() : nullptr;
  if (!data) return false;
  const json::value* tool = data->if_contains("tool");
  const json::value* decision = data->if_contains("decision");
  const json::value* prefix = data->if_contains("commandPrefix");
  if (!tool || !tool->is_string() || tool->get_string().empty() || !decision || !decision->is_string()) return false;
  if (prefix && !prefix->is_string()) return false;
  const json::string& verdict = decision->get_string();
  if (verdict != "allow" && verdict != "reject") return false;
  PermissionRule rule{std::string(tool->get_string()), prefix ? std::string(prefix->get_string()) : std::string(),
                      verdict == "allow"};
  // A bash rule without a prefix would cover every simple command: never what was chosen.
  if (rule.tool == "bash" && rule.command_prefix.empty()) return false;
  permissions.add(std::move(rule));
  return true;
}

} // namespace acp::engine
