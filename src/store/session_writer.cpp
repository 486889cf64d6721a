#include "store/session_writer.hpp"

#include "support/json_text.hpp"
#include "store/errors.hpp"
#include "store/event_model.hpp"
#include "store/records.hpp"

#include <boost/json/serializer.hpp>

namespace acp::store {

namespace json = boost::json;

SessionWriter::SessionWriter(Generation generation, KnownLog log, std::unique_ptr<Appender> appender)
    : generation_(generation), log_(std::move(log)), appender_(std::move(appender)) {}

SessionWriter::SessionWriter(SessionWriter&& o) noexcept
    : generation_(o.generation_), log_(std::move(o.log_)), appender_(std::move(o.appender_)),
      compaction_id_(std::move(o.compaction_id_)), released_(o.released_) {}

SessionWriter::~SessionWriter() {
  if (appender_) appender_->release();
}

void SessionWriter::ensure_usable() const {
  if (!appender_ || released_) throw StoreError("session writer already released");
  // Not released by us: the backend lost the lock (a database connection that went away).
  if (!appender_->held())
    throw StoreError(log_.path + ": the session's write lock was lost with its store connection; nothing more is "
                                 "written in this turn");
}

std::vector<json::object> SessionWriter::append(std::vector<NewEvent> batch, bool sync) {
  ensure_usable();
  std::vector<json::object> records;
  records.reserve(batch.size());
  std::int64_t seq = next_seq();
  const bool v01 = generation_ == Generation::project_dirs;
  for (auto& e : batch) {
    const bool surface = is_surface_type(e.type);
    if (!surface && (e.surfaceOp || e.sourceEventSeqs))
      throw InvalidBatch("event type " + e.type + " must not carry surfaceOp or sourceEventSeqs");
    if (surface && !e.surfaceOp) throw InvalidBatch("surface event type " + e.type + " requires surfaceOp");
    records.push_back(event_record(e.type, seq++, e.time.value_or(now_ms()), std::move(e.data), e.surfaceOp,
                                   e.sourceEventSeqs));
    // Last, where 0.1.1 reads it (docs/store-format.md#normalised-events), in both generations: a 45fc log
    // may be continued by a harness that knows the marker and not our type, and our readers need no guess.
    if (e.ignorable) records.back().emplace("ignorable", true);
    // 0.1 messages and compactions carry ids; the returned (normalised) records carry them too.
    if (v01) assign_v01_ids(records.back(), compaction_id_);
  }
  write_bytes(records, sync);
  return records;
}

void SessionWriter::append_chunk_lines(const ChunkLines& batch, bool sync) {
  ensure_usable();
  if (batch.first_seq() != next_seq())
    throw InvalidBatch("chunk batch seq " + std::to_string(batch.first_seq()) + " does not continue the log; expected " +
                       std::to_string(next_seq()));
  if (batch.empty() && log_.on_disk) {
    if (sync) this->sync();
    return;
  }
  appender_->write_plain(log_, batch.text(), batch.count(), sync);
  log_.state.observe_plain(batch.count(), batch.last_time());
  appender_->committed(log_);
}

void SessionWriter::append_records(const std::vector<json::object>& records, bool sync) {
  ensure_usable();
  std::int64_t expect = next_seq();
  for (const auto& r : records) {
    auto s = r.if_contains("seq");
    auto si = s ? safe_int(*s) : std::nullopt;
    if (!si || *si != expect)
      throw InvalidBatch("batch seq " + (s ? support::to_json_text(*s) : std::string("(missing)")) +
                         " does not continue the log; expected " + std::to_string(expect));
    ++expect;
  }
  write_bytes(records, sync);
}

void SessionWriter::write_bytes(const std::vector<json::object>& records, bool sync) {
  if (records.empty() && log_.on_disk) {
    if (sync) this->sync();
    return;
  }
  // Serialized straight into the batch text (no per-record string): a record may hold a huge prompt.
  std::string lines;
  json::serializer sr;
  char buf[16384];
  const bool v01 = generation_ == Generation::project_dirs;
  for (const auto& r : records) {
    std::optional<json::object> shaped;
    if (v01) shaped = to_v01_record(r);
    sr.reset(shaped ? &*shaped : &r);
    while (!sr.done()) lines.append(sr.read(buf, sizeof buf));
    lines += '\n';
  }
  appender_->write(log_, lines, records, sync);
  for (const auto& r : records) log_.state.observe(r);
  appender_->committed(log_);
}

void SessionWriter::sync() {
  ensure_usable();
  appender_->sync(log_);
}

void SessionWriter::release() {
  if (!appender_) return;
  if (appender_->held()) appender_->sync(log_);
  appender_->release();
  released_ = true;
}

} // namespace acp::store
