// Whether a tool call may run without asking, must be refused, or needs the user's permission
// (session/request_permission), from the session's mode and what the user chose "always" for.
//   ask        reads run freely; writes, edits, commands and MCP tools are asked for (the default)
//   read-only  writes, edits, commands and MCP tools are refused without asking
//   auto       nothing is asked (paths stay confined to the session's roots all the same)
// "Always" is remembered per tool; for bash per command prefix (the program and, when it has one,
// its subcommand: `npm test`, `git status`), and only for a simple command: anything with shell
// control (`;`, `&&`, `|`, redirections, substitutions, line breaks) is always asked for, so an
// allowed `npm test` never lets `npm test && rm -rf ~` through.
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::engine {

enum class SessionMode { ask, read_only, auto_approve };

std::string_view mode_id(SessionMode mode);  ///< "ask", "read-only", "auto"
std::optional<SessionMode> parse_mode(std::string_view id);

/// What kind of effect a tool has, for the decision.
enum class ToolEffect { none, changes_files, runs_commands, external };  ///< external: an MCP tool

enum class PermissionNeed { allowed, refused, ask };

/// One "always" choice of the user.
struct PermissionRule {
  std::string tool;
  std::string command_prefix;  ///< bash only
  bool allow = true;
};

class Permissions {
public:
  PermissionNeed check(SessionMode mode, std::string_view tool, ToolEffect effect, std::string_view command = {}) const;

  /// Remembers an "always" choice; false when it cannot be remembered (a compound command).
  bool remember(std::string_view tool, std::string_view command, bool allow);

  const std::vector<PermissionRule>& rules() const { return rules_; }
  void restore(std::vector<PermissionRule> rules) { rules_ = std::move(rules); }
  void add(PermissionRule rule) { rules_.push_back(std::move(rule)); }  ///< after the others: it wins

  /// The prefix an "always" for `command` covers; nullopt for a command with shell control.
  static std::optional<std::string> command_prefix(std::string_view command);

private:
  const PermissionRule* match(std::string_view tool, std::string_view command) const;
  std::vector<PermissionRule> rules_;
};

/// The user's answer to session/request_permission.
enum class PermissionAnswer { allow_once, allow_always, reject_once, reject_always, cancelled };

/// The four options offered (`allow_once`, `allow_always`, `reject_once`, `reject_always`).
boost::json::array permission_options();

/// Reads the client's result `{outcome: {outcome: "selected", optionId} | {outcome: "cancelled"}}`;
/// anything else reads as a rejection (fail closed).
PermissionAnswer read_permission_answer(const boost::json::value& result);

} // namespace acp::engine
