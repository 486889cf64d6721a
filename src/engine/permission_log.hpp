// The log record of one "always" choice (allow_always / reject_always), so the choice survives
// session/load and session/resume. The harness's approval vocabulary (approval/decided: allowed-once,
// rejected, cancelled, unavailable) has no "always", and is not ours to extend: the choice is a
// type of our own, `dsh-acp/permission-rule`, marked `ignorable: true` so harness 0.1.1 (which
// refuses unknown types otherwise, docs/store-format.md#release-011-shapes) skips it.
// schemas/permission-rule.schema.json.
//   {"type":"dsh-acp/permission-rule","seq":N,"time":T,"data":{"tool":"bash","commandPrefix":"npm test","decision":"allow"},"ignorable":true}
//   {"type":"dsh-acp/permission-rule","seq":N,"time":T,"data":{"tool":"bash","command":"rm old.log","decision":"allow"},"ignorable":true}
// The session's mode is logged the same way whenever the user changes it (the harness has no mode
// of ours: its `mode/set` is a legacy type it refuses), so it too survives load and resume:
//   {"type":"dsh-acp/mode","seq":N,"time":T,"data":{"mode":"auto"},"ignorable":true}
#pragma once

#include "engine/permissions.hpp"
#include "store/new_event.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string_view>

namespace acp::engine {

inline constexpr std::string_view kPermissionRuleEvent = "dsh-acp/permission-rule";
inline constexpr std::string_view kModeEvent = "dsh-acp/mode";

/// The event to append for `rule` (bash: its commandPrefix or its exact command).
store::NewEvent permission_rule_event(const PermissionRule& rule);

/// Applies one logged event (normalised, as the store's readers deliver it) when it is a
/// permission rule: appended after the rules before it, so a later rule covering the same command
/// wins. A prefix today's rules would not offer (the release before exact rules wrote `rm`,
/// `bash`, ...) is read as an exact rule when it allows. Returns false (nothing changed) for any
/// other event and for a malformed rule.
bool restore_permission_rule(const boost::json::object& event, Permissions& permissions);

/// The event to append when the user chose `mode`.
store::NewEvent mode_event(SessionMode mode);

/// Applies one logged event when it is a mode choice (the latest wins). Returns false for any other
/// event and for an unknown mode (a newer release's: the session keeps what it had).
bool restore_mode(const boost::json::object& event, std::optional<SessionMode>& mode);

/// True for a fork's `dsh-acp/fork` event saying the source's choices do not apply to it (the source
/// was someone else's: store/fork_seed.hpp): the rules and the mode logged before it are forgotten.
bool drops_inherited_choices(const boost::json::object& event);

/// What a load or resume folds from the log as it passes: the "always" rules and the mode.
struct LoggedChoices {
  Permissions permissions;
  std::optional<SessionMode> mode;  ///< the latest mode logged, none when the user never chose one
  void observe(const boost::json::object& event) {
    if (restore_permission_rule(event, permissions) || restore_mode(event, mode)) return;
    if (drops_inherited_choices(event)) {
      permissions = Permissions();
      mode.reset();
    }
  }
};

} // namespace acp::engine
