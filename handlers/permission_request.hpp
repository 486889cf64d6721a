// session/request_permission as ACP shapes it: the options offered for one tool call (the "always"
// ones named after the rule they create) and the client's answer read fail-closed.
#pragma once

#include "engine/permissions.hpp"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

namespace acp::handlers {

/// The options offered: `allow_once`, `allow_always`, `reject_once`, `reject_always`, the "always"
/// ones named after `always` (``Always allow `rm old.log` ``); only the "once" ones without it.
boost::json::array permission_options(const engine::PermissionRule* always);

/// Reads the client's result `{outcome: {outcome: "selected", optionId} | {outcome: "cancelled"}}`;
/// anything else reads as a rejection (fail closed).
engine::PermissionAnswer read_permission_answer(const boost::json::value& result);

} // namespace acp::handlers
