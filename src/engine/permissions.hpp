// Whether a tool call may run without asking, must be refused, or needs the user's permission
// (session/request_permission), from the session's mode and what the user chose "always" for.
//   ask        reads run freely; writes, edits, commands and MCP tools are asked for (the default)
//   read-only  writes, edits, commands and MCP tools are refused without asking
//   auto       nothing is asked (paths stay confined to the session's roots all the same)
// "Always" is remembered per tool; for bash per command, as the option's name states it: the exact
// command, or for a few development tools a prefix (`git status …`). command_rule.hpp says which,
// and which commands are asked for every time (shell control, hidden characters, ...), so an
// allowed `npm test` never lets `npm test && rm -rf ~` through and `rm old.log` never covers
// `rm -f important.txt`.
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

/// One "always" choice of the user. A bash rule has exactly one of `command_prefix` and `command`.
struct PermissionRule {
  std::string tool;
  std::string command_prefix;  ///< bash: the words a covered command starts with
  bool allow = true;
  std::string command = {};  ///< bash: the one command covered (trimmed)
};

class Permissions {
public:
  /// `command` and `workdir`: bash's arguments (workdir "" for the working directory).
  PermissionNeed check(SessionMode mode, std::string_view tool, ToolEffect effect, std::string_view command = {},
                       std::string_view workdir = {}) const;

  /// Remembers an "always" choice; false when it cannot be remembered (see rule_for).
  bool remember(std::string_view tool, std::string_view command, bool allow);

  const std::vector<PermissionRule>& rules() const { return rules_; }
  void restore(std::vector<PermissionRule> rules) { rules_ = std::move(rules); }
  void add(PermissionRule rule) { rules_.push_back(std::move(rule)); }  ///< after the others: it wins

  /// The rule an "always" for this call creates (`command`: bash's); nullopt when "always" is not
  /// offered for it (command_rule.hpp).
  static std::optional<PermissionRule> rule_for(std::string_view tool, std::string_view command,
                                                std::string_view workdir = {}, bool allow = true);

private:
  const PermissionRule* match(std::string_view tool, std::string_view command, std::string_view workdir) const;
  std::vector<PermissionRule> rules_;
};

/// The user's answer to a permission question.
enum class PermissionAnswer { allow_once, allow_always, reject_once, reject_always, cancelled };

/// How an option names what `rule` covers: "`rm old.log`", "`git status …`", "every `edit` call".
std::string rule_scope_name(const PermissionRule& rule);


} // namespace acp::engine
