#include "engine/permissions.hpp"

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

std::optional<std::string> Permissions::command_prefix(std::string_view command) {
  // Shell control of any kind makes the command more than its prefix says.
  if (command.find_first_of(";&|<>`$()\n\r\\{}") != std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < command.size() && words.size() < 2) {
    while (i < command.size() && (command[i] == ' ' || command[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < command.size() && command[i] != ' ' && command[i] != '\t') ++i;
    if (i > start) words.push_back(command.substr(start, i - start));
  }
  if (words.empty()) return std::nullopt;
  std::string prefix(words[0]);
  // A subcommand is a plain word (`test`, `status`), not an option or a path.
  if (words.size() == 2) {
    bool plain = !words[1].empty();
    for (char c : words[1]) plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
    if (plain && words[1].front() != '-') prefix += " " + std::string(words[1]);
  }
  return prefix;
}

const PermissionRule* Permissions::match(std::string_view tool, std::string_view command) const {
  const PermissionRule* found = nullptr;
  std::optional<std::string> simple;
  if (tool == "bash") {
    if (!command_prefix(command)) return nullptr;  // never covered by an "always"
    // Normalised the way prefixes were taken: single spaces between the words.
    std::string words;
    std::size_t i = 0;
    while (i < command.size()) {
      while (i < command.size() && (command[i] == ' ' || command[i] == '\t')) ++i;
      std::size_t start = i;
      while (i < command.size() && command[i] != ' ' && command[i] != '\t') ++i;
      if (i > start) words += (words.empty() ? "" : " ") + std::string(command.substr(start, i - start));
    }
    simple = std::move(words);
  }
  for (const auto& r : rules_) {
    if (r.tool != tool) continue;
    if (simple) {
      const std::string& p = r.command_prefix;
      bool covers = *simple == p || (simple->size() > p.size() && simple->compare(0, p.size(), p) == 0 && (*simple)[p.size()] == ' ');
      if (!covers) continue;
    }
    found = &r;  // the latest choice wins
  }
  return found;
}

PermissionNeed Permissions::check(SessionMode mode, std::string_view tool, ToolEffect effect, std::string_view command) const {
  if (effect == ToolEffect::none) return PermissionNeed::allowed;
  if (mode == SessionMode::read_only) return PermissionNeed::refused;
  if (mode == SessionMode::auto_approve) return PermissionNeed::allowed;
  if (const PermissionRule* r = match(tool, command)) return r->allow ? PermissionNeed::allowed : PermissionNeed::refused;
  return PermissionNeed::ask;
}

bool Permissions::remember(std::string_view tool, std::string_view command, bool allow) {
  PermissionRule rule{std::string(tool), {}, allow};
  if (tool == "bash") {
    auto prefix = command_prefix(command);
    if (!prefix) return false;
    rule.command_prefix = std::move(*prefix);
  }
  rules_.push_back(std::move(rule));
  return true;
}

json::array permission_options() {
  return json::array{json::object{{"optionId", "allow_once"}, {"name", "Allow"}, {"kind", "allow_once"}},
                     json::object{{"optionId", "allow_always"}, {"name", "Always allow"}, {"kind", "allow_always"}},
                     json::object{{"optionId", "reject_once"}, {"name", "Reject"}, {"kind", "reject_once"}},
                     json::object{{"optionId", "reject_always"}, {"name", "Always reject"}, {"kind", "reject_always"}}};
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
