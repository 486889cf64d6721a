#include "store/fold.hpp"

#include "support/json_text.hpp"
#include "store/errors.hpp"
#include "store/records.hpp"

#include <algorithm>
#include <unordered_set>

namespace acp::store {

namespace json = boost::json;

namespace {

std::string text(const json::value* v) { return v ? support::to_json_text(*v) : std::string("undefined"); }

struct ReplaceOp {
  std::int64_t start, end;
};

// 'append' -> nullopt; a valid replace object -> its range; anything else throws.
std::optional<ReplaceOp> parse_surface_op(const json::value& op, std::int64_t seq) {
  if (op.is_string() && op.get_string() == "append") return std::nullopt;
  const auto* o = op.if_object();
  if (o && o->size() == 3 && o->contains("op") && o->contains("start") && o->contains("end") &&
      o->at("op").is_string() && o->at("op").get_string() == "replace") {
    auto s = safe_int(o->at("start"));
    auto e = safe_int(o->at("end"));
    if (s && e && *s >= 0 && *e >= 0) return ReplaceOp{*s, *e};
  }
  throw FoldError("session event seq " + std::to_string(seq) + " has invalid surfaceOp " + support::to_json_text(op));
}

// Checks provenance rules and returns the seqs (empty when absent).
std::vector<std::int64_t> parse_sources(const json::object& e, std::string_view type, std::int64_t seq) {
  std::vector<std::int64_t> out;
  const json::value* v = e.if_contains("sourceEventSeqs");
  if (!v) return out;
  const std::string where = "session event seq " + std::to_string(seq) + " sourceEventSeqs";
  const auto* a = v->if_array();
  if (!a) throw FoldError(where + " must be an array");
  if (a->empty() && type != "assistant/message") throw FoldError(where + " must not be empty for " + std::string(type));
  std::unordered_set<std::int64_t> seen;
  for (const auto& x : *a) {
    auto s = safe_int(x);
    if (!s || *s < 0) throw FoldError(where + " contains invalid seq " + support::to_json_text(x));
    if (!seen.insert(*s).second) throw FoldError(where + " contains duplicate seq " + std::to_string(*s));
    if (*s >= seq) throw FoldError(where + " references seq " + std::to_string(*s) + " that is not earlier");
    out.push_back(*s);
  }
  return out;
}

json::object without_content(const json::object& data) {
  json::object o = data;
  o.erase("content");
  return o;
}

} // namespace

std::vector<std::int64_t> fold_surface(const std::vector<json::object>& events) {
  std::vector<std::int64_t> nodes;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json::object& e = events[i];
    const json::value* seq_v = e.if_contains("seq");
    auto seq_i = seq_v ? safe_int(*seq_v) : std::nullopt;
    if (!seq_i || *seq_i != std::int64_t(i))
      throw FoldError("session event seq " + text(seq_v) + " is not contiguous; expected " + std::to_string(i));
    const std::int64_t seq = *seq_i;
    const auto type = string_at(e, "type");
    if (!is_surface_type(type)) {
      if (e.contains("surfaceOp"))
        throw FoldError("session event seq " + std::to_string(seq) + " of non-surface type " + std::string(type) +
                        " must not carry surfaceOp");
      if (e.contains("sourceEventSeqs"))
        throw FoldError("session event seq " + std::to_string(seq) + " of non-surface type " + std::string(type) +
                        " must not carry sourceEventSeqs");
      continue;
    }
    const json::value* op_v = e.if_contains("surfaceOp");
    if (!op_v)
      throw FoldError("session event seq " + std::to_string(seq) + " of surface type " + std::string(type) +
                      " requires surfaceOp");
    auto replace = parse_surface_op(*op_v, seq);
    auto sources = parse_sources(e, type, seq);
    if (!replace) {
      nodes.push_back(seq);
      continue;
    }
    const std::string where = "session event seq " + std::to_string(seq) + " replace";
    auto si = std::find(nodes.begin(), nodes.end(), replace->start);
    auto ei = std::find(nodes.begin(), nodes.end(), replace->end);
    if (si == nodes.end()) throw FoldError(where + " start " + std::to_string(replace->start) + " is not on the surface");
    if (ei == nodes.end()) throw FoldError(where + " end " + std::to_string(replace->end) + " is not on the surface");
    if (si > ei)
      throw FoldError(where + " start " + std::to_string(replace->start) + " comes after end " +
                      std::to_string(replace->end) + " on the surface");
    for (auto it = si; it <= ei; ++it)
      if (std::find(sources.begin(), sources.end(), *it) == sources.end())
        throw FoldError(where + " shadows seq " + std::to_string(*it) + " missing from sourceEventSeqs");
    if (type == "tool/result") {
      if (ei != si) throw FoldError(where + ": a tool/result replacement must shadow exactly one node");
      const json::object& old = events[std::size_t(*si)];
      if (string_at(old, "type") != "tool/result")
        throw FoldError(where + ": a tool/result replacement must shadow a tool/result");
      static const json::object empty;
      const json::object* od = object_at(old, "data");
      const json::object* nd = object_at(e, "data");
      if (without_content(od ? *od : empty) != without_content(nd ? *nd : empty))
        throw FoldError(where + ": a tool/result replacement may change only content");
    }
    auto pos = nodes.erase(si, ei + 1);
    nodes.insert(pos, seq);
  }
  return nodes;
}

} // namespace acp::store
