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

bool expand_row(RowKind kind, const json::object& row, std::vector<json::object>& out) {
  if (row.size() != 4 || !row.contains("seq0") || !row.contains("time0") || !row.contains("data")) return false;
  auto seq0 = safe_int(row.at("seq0"));
  auto time0 = safe_int(row.at("time0"));
  const auto* data = row.at("data").if_object();
  if (!seq0 || *seq0 < 0 || !time0 || !data) return false;
  const json::value* turn = data->if_contains("turn");
  const json::value* step = data->if_contains("step");
  const json::value* index = data->if_contains("index");
  const json::value* dt_v = data->if_contains("dt");
  const json::value* payload_v = data->if_contains(kind == RowKind::tool ? "args" : "texts");
  if (!turn || !step || !index || !dt_v || !payload_v) return false;
  const auto* dt = dt_v->if_array();
  const auto* payload = payload_v->if_array();
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
  std::vector<std::int64_t> times{*time0};
  for (const auto& d : *dt) {
    auto di = safe_int(d);
    if (!di) return false;
    std::int64_t t = times.back() + *di;
    if (t > kMaxSafeInteger || t < -kMaxSafeInteger) return false;
    times.push_back(t);
  }
  for (std::size_t k = 0; k < payload->size(); ++k) {
    json::object chunk;
    if (kind == RowKind::tool) {
      chunk["type"] = "tool-call-delta";
      chunk["index"] = *index;
      chunk["id"] = *id;
      if (name) chunk["name"] = *name;
      chunk["argumentsDelta"] = (*payload)[k];
    } else {
      chunk["type"] = kind == RowKind::text ? "text-delta" : "reasoning-delta";
      chunk["index"] = *index;
      chunk["text"] = (*payload)[k];
    }
    json::object d;
    d["turn"] = *turn;
    d["step"] = *step;
    d["chunk"] = std::move(chunk);
    out.push_back(event_record("assistant/chunk", *seq0 + std::int64_t(k), times[k], std::move(d), std::nullopt,
                               std::nullopt));
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
  return expand_row(kind, *o, out) ? LineDecode::row : LineDecode::malformed;
}

} // namespace acp::store
