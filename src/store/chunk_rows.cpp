#include "store/chunk_rows.hpp"

#include "store/records.hpp"

namespace acp::store {

namespace json = boost::json;

namespace {

enum class RowKind { none, text, reasoning, tool };

RowKind row_kind(const json::object& o) {
  auto t = string_at(o, "type");
  if (t == "text-chunks") return RowKind::text;
  if (t == "reasoning-chunks") return RowKind::reasoning;
  if (t == "tool-call-chunks") return RowKind::tool;
  return RowKind::none;
}

// Expands a valid row into its member events, moving its payload strings into them. The events
// are built in the row's own storage, each object sized up front: a row stands for dozens of
// events, and building them key by key on the heap (every table regrown, every text copied) was
// a third of a packed log's replay.
bool expand_row(RowKind kind, json::object& row, std::vector<json::object>& out) {
  if (row.size() != 4 || !row.contains("seq0") || !row.contains("time0") || !row.contains("data")) return false;
  auto seq0 = safe_int(row.at("seq0"));
  auto time0 = safe_int(row.at("time0"));
  auto* data = row.at("data").if_object();
  if (!seq0 || *seq0 < 0 || !time0 || !data) return false;
  const json::value* turn = data->if_contains("turn");
  const json::value* step = data->if_contains("step");
  const json::value* index = data->if_contains("index");
  const json::value* dt_v = data->if_contains("dt");
  json::value* payload_v = data->if_contains(kind == RowKind::tool ? "args" : "texts");
  if (!turn || !step || !index || !dt_v || !payload_v) return false;
  const auto* dt = dt_v->if_array();
  auto* payload = payload_v->if_array();
  if (!dt || !payload || payload->empty() || dt->size() != payload->size() - 1) return false;
  for (const auto& p : *payload)
    if (!p.is_string()) return false;
  const json::value* id = nullptr;
  const json::value* name = nullptr;
  if (kind == RowKind::tool) {
    id = data->if_contains("id");
    name = data->if_contains("name");
    if (!id) return false;
  }
  // Validate every time before emitting anything: a malformed row contributes no events.
  std::vector<std::int64_t> times;
  times.reserve(payload->size());
  times.push_back(*time0);
  for (const auto& d : *dt) {
    auto di = safe_int(d);
    if (!di) return false;
    std::int64_t t = times.back() + *di;
    if (t > kMaxSafeInteger || t < -kMaxSafeInteger) return false;
    times.push_back(t);
  }
  const json::storage_ptr& sp = row.storage();
  const json::string_view chunk_type =
      kind == RowKind::tool ? "tool-call-delta" : kind == RowKind::text ? "text-delta" : "reasoning-delta";
  out.reserve(out.size() + payload->size());
  for (std::size_t k = 0; k < payload->size(); ++k) {
    // Key order as written: chunk {type, index, [id, name,] text | argumentsDelta}; event
    // {type, seq, time, data{turn, step, chunk}} (harness-compat §1.6, harness-0.1 §3.5).
    json::object chunk(sp);
    chunk.reserve(kind == RowKind::tool ? 5 : 3);
    chunk.emplace("type", chunk_type);
    chunk.emplace("index", *index);
    if (kind == RowKind::tool) {
      chunk.emplace("id", *id);
      if (name) chunk.emplace("name", *name);
      chunk.emplace("argumentsDelta", std::move((*payload)[k]));
    } else {
      chunk.emplace("text", std::move((*payload)[k]));
    }
    json::object d(sp);
    d.reserve(3);
    d.emplace("turn", *turn);
    d.emplace("step", *step);
    d.emplace("chunk", std::move(chunk));
    json::object e(sp);
    e.reserve(4);
    e.emplace("type", "assistant/chunk");
    e.emplace("seq", *seq0 + std::int64_t(k));
    e.emplace("time", times[k]);
    e.emplace("data", std::move(d));
    out.push_back(std::move(e));
  }
  return true;
}

} // namespace

LineDecode decode_storage_line(json::value&& line, std::vector<json::object>& out) {
  auto* o = line.if_object();
  if (!o) return LineDecode::malformed;
  RowKind kind = row_kind(*o);
  if (kind == RowKind::none) {
    out.push_back(std::move(*o));
    return LineDecode::event;
  }
  // A malformed row is rejected before any of its strings is moved out.
  return expand_row(kind, *o, out) ? LineDecode::row : LineDecode::malformed;
}

} // namespace acp::store
