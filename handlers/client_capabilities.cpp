#include "handlers/client_capabilities.hpp"

namespace acp::handlers {

const boost::json::value* client_capability(const boost::json::object& caps, std::string_view group,
                                            std::string_view name) {
  const boost::json::object* in = &caps;
  if (!group.empty()) {
    const boost::json::value* g = caps.if_contains(group);
    in = g ? g->if_object() : nullptr;
  }
  return in ? in->if_contains(name) : nullptr;
}

} // namespace acp::handlers
