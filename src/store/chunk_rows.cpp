#include "store/chunk_rows.hpp"

#include "store/records.hpp"

namespace acp::store {

namespace json = boost::json;

namespace {

using chunk_rows_detail::RowFields;
using chunk_rows_detail::RowKind;

RowKind row_kind(const json::object& o) {
  auto t = string_at(o, "type");
  if (t == "text-chunks") return RowKind::text;
  if (t == "reasoning-chunks") return RowKind::reasoning;
  if (t == "tool-call-chunks") return RowKind::tool;
  return RowKind::none;
}

// Validates the whole row, every time included, before anything is emitted: a malformed row
// contributes no events.
bool validate_row(RowKind kind, json::object& row, RowFields& f, std::vector<std::int64_t>& times) {
  if (row.size() != 4 || !row.contains("seq0") || !row.contains("time0") || !row.contains("data")) return false;
  auto seq0 = safe_int(row.at("seq0"));
  auto time0 = safe_int(row.at("time0"));
  auto* data = row.at("data").if_object();
  if (!seq0 || *seq0 < 0 || !time0 || !data) return false;
  f.kind = kind;
  f.seq0 = *seq0;
  f.turn = data->if_contains("turn");
  f.step = data->if_contains("step");
  f.index = data->if_contains("index");
  const json::value* dt_v = data->if_contains("dt");
  json::value* payload_v = data->if_contains(kind == RowKind::tool ? "args" : "texts");
  if (!f.turn || !f.step || !f.index || !dt_v || !payload_v) return false;
  const auto* dt = dt_v->if_array();
  f.payload = payload_v->if_array();
  if (!dt || !f.payload || f.payload->empty() || dt->size() != f.payload->size() - 1) return false;
  for (const auto& p : *f.payload)
    if (!p.is_string()) return false;
  if (kind == RowKind::tool) {
    f.id = data->if_contains("id");
    f.name = data->if_contains("name");
    if (!f.id) return false;
  }
  times.clear();
  times.reserve(f.payload->size());
  times.push_back(*time0);
  for (const auto& d : *dt) {
    auto di = safe_int(d);
    if (!di) return false;
    std::int64_t t = times.back() + *di;
    if (t > kMaxSafeInteger || t < -kMaxSafeInteger) return false;
    times.push_back(t);
  }
  return true;
}

// Member k of a valid row as an event, built in the row's own storage with each object sized up
// front (building them key by key on the heap, every table regrown, every text copied, was a third
// of a packed log's replay). Key order as written: chunk {type, index, [id, name,] text |
// argumentsDelta}; event {type, seq, time, data{turn, step, chunk}}
// (docs/store-format.md#packed-chunk-rows).
json::object member_event(const RowFields& f, const json::storage_ptr& sp, std::size_t k, std::int64_t time) {
  const json::string_view chunk_type =
      f.kind == RowKind::tool ? "tool-call-delta" : f.kind == RowKind::text ? "text-delta" : "reasoning-delta";
  json::object chunk(sp);
  chunk.reserve(f.kind == RowKind::tool ? 5 : 3);
  chunk.emplace("type", chunk_type);
  chunk.emplace("index", *f.index);
  if (f.kind == RowKind::tool) {
    chunk.emplace("id", *f.id);
    if (f.name) chunk.emplace("name", *f.name);
    chunk.emplace("argumentsDelta", std::move((*f.payload)[k]));
  } else {
    chunk.emplace("text", std::move((*f.payload)[k]));
  }
  json::object d(sp);
  d.reserve(3);
  d.emplace("turn", *f.turn);
  d.emplace("step", *f.step);
  d.emplace("chunk", std::move(chunk));
  json::object e(sp);
  e.reserve(4);
  e.emplace("type", "assistant/chunk");
  e.emplace("seq", f.seq0 + std::int64_t(k));
  e.emplace("time", time);
  e.emplace("data", std::move(d));
  return e;
}

bool expand_row(RowKind kind, json::object& row, std::vector<json::object>& out) {
  RowFields f;
  std::vector<std::int64_t> times;
  if (!validate_row(kind, row, f, times)) return false;
  out.reserve(out.size() + f.payload->size());
  for (std::size_t k = 0; k < f.payload->size(); ++k) out.push_back(member_event(f, row.storage(), k, times[k]));
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

LineDecode StorageLineEvents::decode(json::value&& line) {
  clear();
  auto* o = line.if_object();
  if (!o) return LineDecode::malformed;
  RowKind kind = row_kind(*o);
  if (kind == RowKind::none) {
    events_.push_back(std::move(*o));
    return LineDecode::event;
  }
  row_line_.emplace(std::move(*o));  // the table moves, so views into it taken after this stay valid
  if (!validate_row(kind, *row_line_, fields_, times_)) {
    clear();
    return LineDecode::malformed;
  }
  row_ = true;
  row_members_ = fields_.payload->size();
  seq0_ = fields_.seq0;
  return LineDecode::row;
}

json::object& StorageLineEvents::event(std::size_t k) {
  if (!row_) return events_[k];
  if (member_ && member_index_ == k) return *member_;
  member_index_ = k;
  // The previous member's object, rewritten in place, unless a consumer moved it (or a part of it)
  // away. Positions, not cached pointers: a consumer's lookup may regrow a table.
  json::object* data = nullptr;
  json::object* chunk = nullptr;
  if (member_ && member_->size() == 4 && (data = member_->begin()[3].value().if_object()) && data->size() == 3 &&
      (chunk = data->begin()[2].value().if_object()) && chunk->size() == chunk_size_) {
    json::key_value_pair* e = member_->begin();
    e[1].value() = seq0_ + std::int64_t(k);
    e[2].value() = times_[k];
    (chunk->end() - 1)->value() = std::move((*fields_.payload)[k]);
    return *member_;
  }
  member_.emplace(member_event(fields_, row_line_->storage(), k, times_[k]));
  chunk_size_ = member_->begin()[3].value().get_object().begin()[2].value().get_object().size();
  return *member_;
}

void StorageLineEvents::clear() {
  events_.clear();
  row_ = false;
  row_members_ = 0;
  member_.reset();
  row_line_.reset();
  fields_ = {};
}

} // namespace acp::store
