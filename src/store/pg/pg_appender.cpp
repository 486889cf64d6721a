#include "store/pg/pg_appender.hpp"

#include "store/errors.hpp"
#include "store/pg/pg_store.hpp"
#include "store/pg/schema.hpp"
#include "store/records.hpp"
#include "support/json_text.hpp"

#include <algorithm>

namespace acp::store::pg {

namespace json = boost::json;

namespace {

// Lines per INSERT: 4 parameters each, well below the protocol's 65535.
constexpr std::size_t kRowsPerStatement = 1000;

Param opt_param(const std::optional<std::string>& v) {
  return v ? Param(std::string_view(*v)) : std::nullopt;
}

} // namespace

void insert_session_row(PgConnection& c, const SessionHeader& h, Generation shape, std::string_view header_line) {
  const std::string version = std::to_string(h.version);
  const std::string created = std::to_string(h.createdAt);
  const std::string seed = h.seedLength ? std::to_string(*h.seedLength) : std::string();
  const std::string depth = std::to_string(h.delegationDepth);
  const std::string size = std::to_string(header_line.size() + 1);
  std::optional<std::string> cwd_key;
  if (h.cwd) cwd_key = normalize_cwd(*h.cwd);
  try {
    // owner: the connected role (the column's default); the listing time of an empty session is
    // its creation, as a file's.
    c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, version, created_at, cwd, cwd_key, "
           "parent_session, seed_length, delegation_depth, origin, agent_preset, updated_at, size_bytes, event_count) "
           "VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6, $7, $8, $9::bigint, $10::bigint, $11, $12, $5::bigint, "
           "$13::bigint, 0)",
           {h.id, pg::generation_name(shape), header_line, version, created, opt_param(h.cwd), opt_param(cwd_key),
            opt_param(h.parentSession), h.seedLength ? Param(seed) : std::nullopt, depth, opt_param(h.origin),
            opt_param(h.agentPreset), size});
  } catch (const PgError& e) {
    // 23505: the id is taken, by a session this role may or may not see (no existence leak:
    // create() of an id somebody else holds fails as an existing id does).
    if (e.sqlstate() == "23505") throw SessionExists(h.id);
    throw;
  }
}

void insert_lines(PgConnection& c, const std::string& where, const std::string& id, const std::vector<LineRow>& rows,
                  const BatchEffect& effect, bool in_transaction) {
  if (rows.empty()) return;
  std::optional<Transaction> tx;
  if (!in_transaction && rows.size() > kRowsPerStatement) tx.emplace(c);
  for (std::size_t begin = 0; begin < rows.size(); begin += kRowsPerStatement) {
    const std::size_t end = std::min(rows.size(), begin + kRowsPerStatement);
    const bool last = end == rows.size();
    const std::int64_t first = rows[begin].seq;
    const std::int64_t next = last ? effect.next_seq : rows[end].seq;
    std::uint64_t bytes = 0;
    for (std::size_t i = begin; i < end; ++i) bytes += rows[i].line.size() + 1;
    // The row's count is checked and moved on by the statement that inserts the lines: a batch that
    // does not continue the stored log inserts nothing.
    std::vector<std::string> numbers;
    numbers.reserve(5 + 2 * (end - begin));
    numbers.push_back(std::to_string(next));
    numbers.push_back(std::to_string(bytes));
    numbers.push_back(last && effect.updated_at ? std::to_string(*effect.updated_at) : std::string());
    numbers.push_back(std::to_string(first));
    std::vector<Param> params;
    params.reserve(6 + 4 * (end - begin));
    params.emplace_back(id);
    params.emplace_back(numbers[0]);
    params.emplace_back(numbers[1]);
    params.push_back(last && effect.updated_at ? Param(numbers[2]) : std::nullopt);
    params.push_back(last && effect.title ? Param(*effect.title) : std::nullopt);
    params.emplace_back(numbers[3]);
    std::string sql =
        "WITH u AS (UPDATE dsh_acp.sessions SET event_count = $2::bigint, size_bytes = size_bytes + $3::bigint, "
        "updated_at = COALESCE($4::bigint, updated_at), title = COALESCE($5::text, title) "
        "WHERE id = $1 AND event_count = $6::bigint RETURNING id) "
        "INSERT INTO dsh_acp.events (session_id, seq, type, time, line) "
        "SELECT u.id, v.seq, v.type, v.time, v.line FROM u, (VALUES ";
    for (std::size_t i = begin; i < end; ++i) {
      numbers.push_back(std::to_string(rows[i].seq));
      numbers.push_back(std::to_string(rows[i].time));
    }
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t k = params.size() + 1;
      if (i > begin) sql += ',';
      sql += "($" + std::to_string(k) + "::bigint,$" + std::to_string(k + 1) + "::text,$" + std::to_string(k + 2) +
             "::bigint,$" + std::to_string(k + 3) + "::text)";
      params.emplace_back(numbers[4 + 2 * (i - begin)]);
      params.emplace_back(rows[i].type);
      params.emplace_back(numbers[5 + 2 * (i - begin)]);
      params.emplace_back(rows[i].line);
    }
    sql += ") AS v(seq, type, time, line)";
    PgResult r = c.exec(sql, params);
    if (r.affected() != std::int64_t(end - begin)) {
      PgResult now = c.exec("SELECT event_count FROM dsh_acp.sessions WHERE id = $1", {id});
      throw StoreError(where + ": log changed under the writer: it holds " +
                       (now.rows() ? std::string(now.value(0, 0)) + " events" : std::string("no session")) +
                       ", the batch starts at seq " + std::to_string(first));
    }
  }
  if (tx) tx->commit();
}

PgAppender::PgAppender(PgStore& store, PgConnection conn, std::string id, Generation shape)
    : store_(&store), conn_(std::move(conn)), id_(std::move(id)), shape_(shape) {}

void PgAppender::lock(const LockWait& wait) {
  store_->lock_session(*conn_, id_, wait);
  locked_ = true;
}

void PgAppender::write(KnownLog& log, const std::string& lines, const std::vector<json::object>& records, bool) {
  if (!held()) throw StoreError("PostgreSQL store " + store_->name() + ": session " + id_ + ": the writer lost its lock");
  BatchEffect effect;
  effect.first_seq = log.state.count();
  effect.next_seq = effect.first_seq + std::int64_t(records.size());
  effect.bytes = lines.size();
  std::vector<LineRow> rows;
  rows.reserve(records.size());
  std::size_t at = 0;
  for (const auto& r : records) {
    const std::size_t nl = lines.find('\n', at);
    if (nl == std::string::npos) throw StoreError("internal: a batch has fewer lines than records");
    LineRow row;
    row.line = std::string_view(lines).substr(at, nl - at);
    at = nl + 1;
    const json::value* seq = member_at(r, 1, "seq");
    const json::value* time = member_at(r, 2, "time");
    row.seq = seq ? safe_int(*seq).value_or(0) : 0;
    row.time = time ? safe_int(*time).value_or(0) : 0;
    row.type = std::string(string_member(r, 0, "type"));
    if (row.type == "session/title")
      if (const json::object* d = object_member(r, 3, "data")) effect.title = std::string(string_at(*d, "title"));
    effect.updated_at = row.time;
    rows.push_back(std::move(row));
  }
  if (at != lines.size()) throw StoreError("internal: a batch has more lines than records");
  try {
    if (!log.on_disk) {
      // Published with its header in the batch's transaction: the session appears whole or not at all.
      const std::string header_line = support::to_json_text(header_record(log.header));
      Transaction tx(*conn_);
      insert_session_row(*conn_, log.header, shape_, header_line);
      insert_lines(*conn_, log.path, id_, rows, effect, true);
      tx.commit();
      header_line_ = header_line;
      log.on_disk = true;
      log.size = header_line.size() + 1 + lines.size();
    } else {
      insert_lines(*conn_, log.path, id_, rows, effect, false);
      log.size += lines.size();
    }
  } catch (const PgError& e) {
    // The lock went with the connection: this writer is done.
    if (connection_gone(e) || !conn_->ok()) lost_ = true;
    throw store_->named(e);
  }
}

void PgAppender::committed(const KnownLog& log) { store_->remember(log, shape_, header_line_); }

void PgAppender::release() noexcept {
  if (!conn_) return;
  bool reusable = !lost_ && conn_->ok();
  if (reusable && locked_) reusable = store_->unlock_session(*conn_, id_);
  locked_ = false;
  store_->give_back(std::move(*conn_), reusable);
  conn_.reset();
}

} // namespace acp::store::pg
