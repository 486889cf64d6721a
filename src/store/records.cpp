#include "store/records.hpp"

#include <cmath>

namespace acp::store {

namespace json = boost::json;

std::optional<std::int64_t> safe_int(const json::value& v) {
  // Log payloads are lossless JSON, which has no -0 (docs/store-format.md#event-envelope).
  if (v.is_double() && v.get_double() == 0 && std::signbit(v.get_double())) return std::nullopt;
  return support::json_integer(v, -kMaxSafeInteger, kMaxSafeInteger);
}

json::object header_record(const SessionHeader& h) {
  json::object o;
  o["type"] = "session";
  o["version"] = h.version;
  o["id"] = h.id;
  o["createdAt"] = h.createdAt;
  if (h.cwd) o["cwd"] = *h.cwd;
  if (h.parentSession) o["parentSession"] = *h.parentSession;
  if (h.seedLength) o["seedLength"] = *h.seedLength;
  if (h.origin) o["origin"] = *h.origin;
  o["delegationDepth"] = h.delegationDepth;
  if (h.agentPreset) o["agentPreset"] = *h.agentPreset;
  return o;
}

std::optional<SessionHeader> parse_header(const json::value& v) {
  const auto* o = v.if_object();
  if (!o) return std::nullopt;
  auto type = o->if_contains("type");
  if (!type || !type->is_string() || type->get_string() != "session") return std::nullopt;
  auto version = o->if_contains("version");
  auto id = o->if_contains("id");
  auto created = o->if_contains("createdAt");
  auto depth = o->if_contains("delegationDepth");
  if (!version || !version->is_number() || !id || !id->is_string() || !created || !created->is_number() || !depth)
    return std::nullopt;
  auto depth_i = safe_int(*depth);
  if (!depth_i || *depth_i < 0) return std::nullopt;
  SessionHeader h;
  // A non-integral version can never equal 0; keep it distinguishable from 0 for the version check.
  auto version_i = safe_int(*version);
  h.version = version_i ? *version_i : -1;
  h.id = std::string(id->get_string());
  auto created_i = safe_int(*created);
  if (created_i) {
    h.createdAt = *created_i;
  } else {
    // "a number" is all the harness requires; keep huge or fractional values representable.
    const double d = created->to_number<double>();
    h.createdAt = std::isfinite(d) && std::fabs(d) < 9e18 ? std::int64_t(std::llround(d)) : 0;
  }
  h.delegationDepth = *depth_i;
  if (auto c = o->if_contains("cwd")) {
    if (!c->is_string()) return std::nullopt;
    h.cwd = std::string(c->get_string());
  }
  if (auto p = o->if_contains("parentSession")) {
    if (!p->is_string()) return std::nullopt;
    h.parentSession = std::string(p->get_string());
  }
  if (auto s = o->if_contains("seedLength")) {
    auto si = safe_int(*s);
    if (!si) return std::nullopt;
    h.seedLength = *si;
  }
  // 0.1.1 additions (docs/store-format.md#header): origin absent or "subagent", agentPreset absent or a string.
  if (auto s = o->if_contains("origin")) {
    if (!s->is_string() || s->get_string() != "subagent") return std::nullopt;
    h.origin = std::string(s->get_string());
  }
  if (auto s = o->if_contains("agentPreset")) {
    if (!s->is_string()) return std::nullopt;
    h.agentPreset = std::string(s->get_string());
  }
  return h;
}

bool has_retired_header_keys(const json::object& header) {
  return header.contains("sandboxMode") || header.contains("approvalPolicy");
}

bool is_surface_type(std::string_view type) {
  return type == "user/message" || type == "assistant/message" || type == "tool/result" ||
         type == "steering/message";
}

json::object event_record(std::string_view type, std::int64_t seq, std::int64_t time, json::object data,
                          const std::optional<json::value>& surface_op,
                          const std::optional<json::array>& source_event_seqs, SurfaceKeyOrder order) {
  // Sized up front: growing an object key by key reallocated its table on nearly every insert,
  // and building log events was a third of a prompt round trip's allocations.
  json::object o;
  o.reserve(6);
  o["type"] = type;
  o["seq"] = seq;
  o["time"] = time;
  o["data"] = std::move(data);
  if (order == SurfaceKeyOrder::sources_first) {
    if (source_event_seqs) o["sourceEventSeqs"] = *source_event_seqs;
    if (surface_op) o["surfaceOp"] = *surface_op;
  } else {
    if (surface_op) o["surfaceOp"] = *surface_op;
    if (source_event_seqs) o["sourceEventSeqs"] = *source_event_seqs;
  }
  return o;
}

std::string_view string_at(const json::object& o, std::string_view key) {
  auto v = o.if_contains(key);
  if (!v || !v->is_string()) return {};
  return v->get_string();
}

const json::object* object_at(const json::object& o, std::string_view key) {
  auto v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

} // namespace acp::store
