// The log record of one "always" choice (allow_always / reject_always), so the choice survives
// session/load and session/resume. The harness's approval vocabulary (approval/decided: allowed-once,
// rejected, cancelled, unavailable) has no "always", and is not ours to extend: the choice is a
// type of our own, `dsh-acp/permission-rule`, marked `ignorable: true` so harness 0.1.1 (which
// refuses unknown types otherwise, docs/store-format.md#release-011-shapes) skips it.
// schemas/permission-rule.schema.json.
//   {"type":"dsh-acp/permission-rule","seq":N,"time":T,"data":{"tool":"bash","commandPrefix":"npm test","decision":"allow"},"ignorable":true}
//   {"type":"dsh-acp/permission-rule","seq":N,"time":T,"data":{"tool":"bash","command":"rm old.log","decision":"allow"},"ignorable":true}
#pragma once

#include "engine/permissions.hpp"
#include "store/new_event.hpp"

#include <boost/json/object.hpp>

#include <string_view>

namespace acp::engine {

inline constexpr std::string_view kPermissionRuleEvent = "dsh-acp/permission-rule";

/// The event to append for `rule` (bash: its commandPrefix or its exact command).
store::NewEvent permission_rule_event(const PermissionRule& rule);

/// Applies one logged event (normalised, as the store's readers deliver it) when it is a
/// permission rule: appended after the rules before it, so a later rule covering the same command
/// wins. A prefix today's rules would not offer (the release before exact rules wrote `rm`,
/// `bash`, ...) is read as an exact rule when it allows. Returns false (nothing changed) for any
/// other event and for a malformed rule.
bool restore_permission_rule(const boost::json::object& event, Permissions& permissions);

} // namespace acp::engine
