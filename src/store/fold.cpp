#include "store/fold.hpp"

#include "support/json_text.hpp"
#include "support/sha256.hpp"
#include "store/errors.hpp"
#include "store/records.hpp"


#include <algorithm>
#include <cstring>
#include <string>
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

// Canonical form for json_digest(): a type tag, then the payload; lengths prefix every
// variable-size part so no two different values share an encoding.
void canonical(const json::value& v, std::string& out) {
  auto length = [&](std::size_t n) { out += std::to_string(n); out.push_back(':'); };
  switch (v.kind()) {
    case json::kind::null: out.push_back('n'); return;
    case json::kind::bool_: out.push_back(v.get_bool() ? 't' : 'f'); return;
    case json::kind::int64:
      if (v.get_int64() < 0) {
        out.push_back('i');
        out += std::to_string(v.get_int64());
      } else {
        out.push_back('u');  // a non-negative int64 equals the uint64 of the same value
        out += std::to_string(v.get_int64());
      }
      out.push_back(';');
      return;
    case json::kind::uint64:
      out.push_back('u');
      out += std::to_string(v.get_uint64());
      out.push_back(';');
      return;
    case json::kind::double_: {
      double d = v.get_double();
      if (d == 0) d = 0;  // -0 == 0
      std::uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      out.push_back('d');
      out += std::to_string(bits);
      out.push_back(';');
      return;
    }
    case json::kind::string:
      out.push_back('s');
      length(v.get_string().size());
      out.append(v.get_string().data(), v.get_string().size());
      return;
    case json::kind::array:
      out.push_back('a');
      length(v.get_array().size());
      for (const auto& x : v.get_array()) canonical(x, out);
      return;
    case json::kind::object: {
      const auto& o = v.get_object();
      std::vector<const json::key_value_pair*> members;
      members.reserve(o.size());
      for (const auto& kv : o) members.push_back(&kv);
      std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->key() < b->key(); });
      out.push_back('o');
      length(members.size());
      for (const auto* kv : members) {
        length(kv->key().size());
        out.append(kv->key().data(), kv->key().size());
        canonical(kv->value(), out);
      }
      return;
    }
  }
}

// What a tool/result replacement must preserve: its data without `content` (a missing or
// non-object data counts as {}).
std::array<unsigned char, 32> tool_result_digest(const json::object& event) {
  json::object rest;
  if (const json::object* d = object_at(event, "data"))
    for (const auto& kv : *d)
      if (kv.key() != "content") rest.emplace(kv.key(), kv.value());  // content may be large: never copied
  return json_digest(rest);
}

} // namespace

std::array<unsigned char, 32> json_digest(const json::value& v) {
  std::string text;
  canonical(v, text);
  return support::sha256(text);
}

FoldStep SurfaceFold::apply(const json::object& e) {
  const std::int64_t i = count_;
  const json::value* seq_v = e.if_contains("seq");
  auto seq_i = seq_v ? safe_int(*seq_v) : std::nullopt;
  if (!seq_i || *seq_i != i)
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
    ++count_;
    return {};
  }
  const json::value* op_v = e.if_contains("surfaceOp");
  if (!op_v)
    throw FoldError("session event seq " + std::to_string(seq) + " of surface type " + std::string(type) +
                    " requires surfaceOp");
  auto replace = parse_surface_op(*op_v, seq);
  auto sources = parse_sources(e, type, seq);
  const bool tool_result = type == "tool/result";
  auto remember_digest = [&] {
    if (tool_result) tool_digests_.emplace_back(seq, tool_result_digest(e));
  };
  if (!replace) {
    remember_digest();
    nodes_.push_back(Node{seq, tool_result});
    ++count_;
    return FoldStep{FoldStep::Kind::appended, nodes_.size() - 1, nodes_.size() - 1};
  }
  const std::string where = "session event seq " + std::to_string(seq) + " replace";
  auto at = [&](std::int64_t s) {
    return std::find_if(nodes_.begin(), nodes_.end(), [s](const Node& n) { return n.seq == s; });
  };
  auto si = at(replace->start);
  auto ei = at(replace->end);
  if (si == nodes_.end()) throw FoldError(where + " start " + std::to_string(replace->start) + " is not on the surface");
  if (ei == nodes_.end()) throw FoldError(where + " end " + std::to_string(replace->end) + " is not on the surface");
  if (si > ei)
    throw FoldError(where + " start " + std::to_string(replace->start) + " comes after end " +
                    std::to_string(replace->end) + " on the surface");
  for (auto it = si; it <= ei; ++it)
    if (std::find(sources.begin(), sources.end(), it->seq) == sources.end())
      throw FoldError(where + " shadows seq " + std::to_string(it->seq) + " missing from sourceEventSeqs");
  auto digest_of = [&](std::int64_t s) {
    return std::find_if(tool_digests_.begin(), tool_digests_.end(), [s](const auto& d) { return d.first == s; });
  };
  if (tool_result) {
    if (ei != si) throw FoldError(where + ": a tool/result replacement must shadow exactly one node");
    if (!si->tool_result) throw FoldError(where + ": a tool/result replacement must shadow a tool/result");
    if (digest_of(si->seq)->second != tool_result_digest(e))
      throw FoldError(where + ": a tool/result replacement may change only content");
  }
  FoldStep step{FoldStep::Kind::replaced, std::size_t(si - nodes_.begin()), std::size_t(ei - nodes_.begin())};
  for (auto it = si; it <= ei; ++it)
    if (it->tool_result) tool_digests_.erase(digest_of(it->seq));
  remember_digest();
  auto pos = nodes_.erase(si, ei + 1);
  nodes_.insert(pos, Node{seq, tool_result});
  ++count_;
  return step;
}

std::vector<std::int64_t> SurfaceFold::nodes() const {
  std::vector<std::int64_t> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.seq);
  return out;
}

std::vector<std::int64_t> fold_surface(const std::vector<json::object>& events) {
  SurfaceFold fold;
  for (const auto& e : events) fold.apply(e);
  return fold.nodes();
}

} // namespace acp::store
