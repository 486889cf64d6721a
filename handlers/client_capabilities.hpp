// What the client said it can do in initialize (clientCapabilities, kept as sent): one reader for
// the nested members every handler asks about, so each reads them the same way.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace acp::handlers {

/// clientCapabilities.<group>.<name> (or .<name> when `group` is empty); null when absent.
const boost::json::value* client_capability(const boost::json::object& caps, std::string_view group,
                                            std::string_view name);

/// The same member, as a flag: true only when it is the boolean true.
inline bool client_flag(const boost::json::object& caps, std::string_view group, std::string_view name) {
  const boost::json::value* v = client_capability(caps, group, name);
  return v && v->is_bool() && v->get_bool();
}

} // namespace acp::handlers
