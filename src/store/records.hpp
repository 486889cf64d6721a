// The two record shapes of a session log (docs/store-format.md#header,
// docs/store-format.md#event-envelope): the header and the event envelope. Records are built as
// boost::json::object in the exact insertion order the harness writes, so serialising them with
// to_json_text() gives the harness's bytes.
#pragma once

#include "store/session_types.hpp"
#include "support/json_number.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::store {

inline constexpr std::int64_t kSessionFormatVersion = 0;
using support::kMaxSafeInteger;  // 2^53 - 1

/// The value as an integer when it is a JS "safe integer" (integral, |v| <= 2^53-1), not -0.
std::optional<std::int64_t> safe_int(const boost::json::value& v);

/// `{type:"session",version,id,createdAt,[cwd],[parentSession],[seedLength],delegationDepth}`.
boost::json::object header_record(const SessionHeader& h);

/// The header when `v` is a valid header record (docs/store-format.md#header), nullopt when it is "not a
/// header". The version is *not* checked here: callers report an unsupported version separately.
std::optional<SessionHeader> parse_header(const boost::json::value& v);

/// The header has an own `sandboxMode` or `approvalPolicy` key, which 0.1.1 refuses (docs/store-format.md#header).
bool has_retired_header_keys(const boost::json::object& header);

/// user/message, assistant/message, tool/result, steering/message.
bool is_surface_type(std::string_view type);

/// Order of the two optional surface keys: the agent loop writes sourceEventSeqs first; the
/// crash-repair closers write surfaceOp first (docs/store-format.md#event-envelope).
enum class SurfaceKeyOrder { sources_first, surface_op_first };

/// `{type,seq,time,data,[sourceEventSeqs],[surfaceOp]}` (or closer order).
boost::json::object event_record(std::string_view type, std::int64_t seq, std::int64_t time,
                                 boost::json::object data,
                                 const std::optional<boost::json::value>& surface_op,
                                 const std::optional<boost::json::array>& source_event_seqs,
                                 SurfaceKeyOrder order = SurfaceKeyOrder::sources_first);

/// The string at `key` of `o`, or empty view when missing / not a string.
std::string_view string_at(const boost::json::object& o, std::string_view key);

/// The object at `key` of `o`, or nullptr.
const boost::json::object* object_at(const boost::json::object& o, std::string_view key);

/// o.if_contains(key), looked at first at position `hint`, where the writers put it (an event's
/// `type` 0, `seq` 1, `time` 2, `data` 3): the same result (an object's keys are unique), without
/// comparing the keys before it. For the per-event lookups of a scan.
inline const boost::json::value* member_at(const boost::json::object& o, std::size_t hint, std::string_view key) {
  if (hint < o.size()) {
    const boost::json::key_value_pair& kv = o.begin()[hint];
    if (kv.key() == key) return &kv.value();
  }
  return o.if_contains(key);
}
inline boost::json::value* member_at(boost::json::object& o, std::size_t hint, std::string_view key) {
  return const_cast<boost::json::value*>(member_at(static_cast<const boost::json::object&>(o), hint, key));
}
/// string_at / object_at through member_at.
inline std::string_view string_member(const boost::json::object& o, std::size_t hint, std::string_view key) {
  const boost::json::value* v = member_at(o, hint, key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}
inline const boost::json::object* object_member(const boost::json::object& o, std::size_t hint, std::string_view key) {
  const boost::json::value* v = member_at(o, hint, key);
  return v ? v->if_object() : nullptr;
}

} // namespace acp::store
