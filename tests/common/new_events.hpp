// Building store records by hand in tests and benches: an event of any type, and a text content
// array, as SessionWriter takes them.
#pragma once

#include "store/new_event.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <string>

namespace acp::test_events {

/// An event of `type` with `data` at `time`; `surface`: appended to the conversation's surface.
inline store::NewEvent ev(std::string type, boost::json::object data, std::int64_t time, bool surface = false) {
  store::NewEvent e;
  e.type = std::move(type);
  e.data = std::move(data);
  e.time = time;
  if (surface) e.surfaceOp = boost::json::value("append");
  return e;
}

/// One text block.
inline boost::json::array text(const std::string& t) {
  return boost::json::array{boost::json::object{{"type", "text"}, {"text", t}}};
}

} // namespace acp::test_events
