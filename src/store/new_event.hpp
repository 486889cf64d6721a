// What a caller hands to SessionWriter::append(): an event without seq (the store assigns
// seq = current log length, docs/store-format.md#event-envelope) and usually without time (now).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace acp::store {

struct NewEvent {
  std::string type;
  boost::json::object data;                             ///< payload, keys already in on-disk order
  std::optional<boost::json::value> surfaceOp;          ///< required on surface types, forbidden elsewhere
  std::optional<boost::json::array> sourceEventSeqs;    ///< surface types only
  std::optional<std::int64_t> time;                     ///< Unix ms; now when absent
  /// Written as `"ignorable":true` after the other envelope keys (docs/store-format.md#normalised-events), in both
  /// generations: a harness that does not know the type skips the event instead of refusing the log.
  bool ignorable = false;
};

} // namespace acp::store
