#include "handlers/permission_request.hpp"

#include "protocol/types/permission.hpp"
#include "protocol/wire.hpp"

namespace acp::handlers {

namespace json = boost::json;
using engine::PermissionAnswer;

json::array permission_options(const engine::PermissionRule* always) {
  std::vector<protocol::PermissionOption> options;
  auto add = [&](const char* id, std::string name) { options.push_back({id, std::move(name), id}); };
  add("allow_once", "Allow");
  if (always) add("allow_always", "Always allow " + engine::rule_scope_name(*always));
  add("reject_once", "Reject");
  if (always) add("reject_always", "Always reject " + engine::rule_scope_name(*always));
  json::array out;
  for (const auto& o : options) out.push_back(wire::encode(o));
  return out;
}

PermissionAnswer read_permission_answer(const json::value& result) {
  protocol::RequestPermissionResponse answer;
  try {
    answer = wire::decode<protocol::RequestPermissionResponse>(result);
  } catch (const std::exception&) {
    return PermissionAnswer::reject_once;
  }
  if (answer.outcome.outcome == "cancelled") return PermissionAnswer::cancelled;
  if (answer.outcome.outcome != "selected" || !answer.outcome.optionId) return PermissionAnswer::reject_once;
  const std::string& option = *answer.outcome.optionId;
  if (option == "allow_once") return PermissionAnswer::allow_once;
  if (option == "allow_always") return PermissionAnswer::allow_always;
  if (option == "reject_always") return PermissionAnswer::reject_always;
  return PermissionAnswer::reject_once;
}

} // namespace acp::handlers
