#include "store/pg/pg_appender.hpp"

#include "store/errors.hpp"
#include "store/line_text.hpp"
#include "store/pg/pg_store.hpp"
#include "store/pg/schema.hpp"
#include "store/records.hpp"
#include "support/json_text.hpp"

#include <algorithm>
#include <array>

namespace acp::store::pg {

namespace json = boost::json;

namespace {

// Lines per INSERT, and their bytes (a parameter's length is an int; a huge batch takes several).
constexpr std::size_t kRowsPerStatement = 1000;
constexpr std::size_t kBytesPerStatement = 64u << 20;
// PostgreSQL's limit for one field (and below what an int length of a parameter holds).
constexpr std::size_t kMaxLineBytes = (1u << 30) - 1024;

constexpr unsigned kInt8Oid = 20, kTextOid = 25, kInt8ArrayOid = 1016, kTextArrayOid = 1009;

// A batch's lines: the row's count checked and moved on by the statement that inserts them, so a
// batch that does not continue the stored log inserts nothing. indexed_count moves on with it when
// the session's texts were complete and the batch leaves none to the indexer (schema.hpp, version 5).
// Prepared once per connection; the lines go as arrays in binary format (no quoting, no copy into a
// statement text). A batch whose texts go in with it (import_lines) inserts them in the same
// statement (a CTE runs to completion whether or not it is read), so they commit with the lines.
constexpr std::string_view kUpdateRow =
    "u AS (UPDATE dsh_acp.sessions SET event_count = $2, size_bytes = size_bytes + $3, "
    "updated_at = COALESCE($4, updated_at), title = COALESCE($5, title)";
constexpr std::string_view kAdvanceIndexed = ", indexed_count = CASE WHEN indexed_count = $6 THEN $2 ELSE indexed_count END";
constexpr std::string_view kUpdateRowEnd = " WHERE owner = current_user AND id = $1 AND event_count = $6 RETURNING owner, id) ";
constexpr std::string_view kInsertSearch =
    ", t AS (INSERT INTO dsh_acp.search (owner, session_id, seq, part, kind, text, tsv) "
    "SELECT u.owner, u.id, x.seq, x.part, x.kind, x.text, array_to_tsvector(string_to_array(x.words, ' ')) "
    "FROM u, unnest($11, $12, $13, $14, $15) AS x(seq, part, kind, text, words)) ";
constexpr std::string_view kInsertLines =
    "INSERT INTO dsh_acp.events (owner, session_id, seq, type, time, line) SELECT u.owner, u.id, v.seq, v.type, v.time, v.line ";
// Committed without waiting for the WAL flush (kAsyncCommit), and not announced (kQuietCommit):
// set_config(..., true) lasts to the end of the statement's own transaction, so its commit and
// trigger read it.
constexpr std::string_view kSetAsync = "s AS (SELECT set_config('synchronous_commit', 'off', true)), ";
constexpr std::string_view kSetQuiet =
    "s AS (SELECT set_config('synchronous_commit', 'off', true), set_config('dsh_acp.quiet', 'on', true)), ";

struct AppendStatement {
  std::string name, sql;
};

// What a batch does with the session's texts.
enum class Texts {
  advance,  ///< none to index: indexed_count moves on with event_count when they were equal
  with,     ///< inserted by the statement
  deferred  ///< left to the indexer: indexed_count stays
};

// Index: commit (durable, async, quiet) * 3 + Texts.
const std::array<AppendStatement, 9>& append_statements() {
  static const std::array<AppendStatement, 9> all = [] {
    std::array<AppendStatement, 9> out;
    const std::string_view names[] = {"dsh_acp_append", "dsh_acp_append_async", "dsh_acp_append_quiet"};
    const std::string_view suffixes[] = {"", "_search", "_deferred"};
    const std::string_view sets[] = {"", kSetAsync, kSetQuiet};
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t texts = 0; texts < 3; ++texts) {
        std::string sql = "WITH ";
        sql.append(sets[c]).append(kUpdateRow);
        if (Texts(texts) != Texts::deferred) sql.append(kAdvanceIndexed);
        sql.append(kUpdateRowEnd);
        if (Texts(texts) == Texts::with) sql.append(kInsertSearch);
        sql.append(kInsertLines).append(c ? "FROM u, s, " : "FROM u, ").append("unnest($7, $8, $9, $10) AS v(seq, type, time, line)");
        out[c * 3 + texts] = {std::string(names[c]).append(suffixes[texts]), std::move(sql)};
      }
    return out;
  }();
  return all;
}

// The indexer's texts (insert_search_rows): inserted only while the session's indexed_count is where
// they start (a text stored already, by a catch-up beside it, is no conflict), in a durable
// transaction of their own that locks no session row; then the count moved on when it still is, in a
// quiet asynchronous one. Two transactions, because an asynchronous commit of the texts would leave
// their WAL (the GIN index's share is several times the text's size) for the next durable commit to
// flush, which is the session writer's next batch; and a durable commit holding the row lock of the
// count would keep that writer, which updates the same row with every batch, waiting for the flush.
// A crash between the two leaves texts whose count did not move: the catch-up that indexes them again
// skips them (ON CONFLICT DO NOTHING). The first holds the row's key-share lock, so the session cannot
// be deleted beside it and leave texts no session owns.
constexpr std::string_view kIndexTextsName = "dsh_acp_index_texts";
constexpr std::string_view kIndexTexts =
    "WITH q AS (SELECT set_config('dsh_acp.quiet', 'on', true)) "
    "INSERT INTO dsh_acp.search (owner, session_id, seq, part, kind, text, tsv) "
    "SELECT s.owner, s.id, x.seq, x.part, x.kind, x.text, array_to_tsvector(string_to_array(x.words, ' ')) "
    "FROM q, dsh_acp.sessions s, unnest($4, $5, $6, $7, $8) AS x(seq, part, kind, text, words) "
    "WHERE s.owner = current_user AND s.id = $1 AND s.indexed_count = $2 AND s.event_count >= $3 ON CONFLICT DO NOTHING";
constexpr std::string_view kIndexedName = "dsh_acp_indexed";
constexpr std::string_view kIndexed =
    "UPDATE dsh_acp.sessions SET indexed_count = $3 WHERE owner = current_user AND id = $1 AND indexed_count = $2 "
    "AND event_count >= $3";

const std::vector<unsigned> kAppendTypes{kTextOid, kInt8Oid,      kInt8Oid,      kInt8Oid,      kTextOid,
                                         kInt8Oid, kInt8ArrayOid, kTextArrayOid, kInt8ArrayOid, kTextArrayOid};
const std::vector<unsigned> kAppendSearchTypes{kTextOid,      kInt8Oid,      kInt8Oid,      kInt8Oid,      kTextOid,
                                               kInt8Oid,      kInt8ArrayOid, kTextArrayOid, kInt8ArrayOid, kTextArrayOid,
                                               kInt8ArrayOid, kInt8ArrayOid, kTextArrayOid, kTextArrayOid, kTextArrayOid};

const std::vector<unsigned> kIndexTextsTypes{kTextOid,      kInt8Oid,      kInt8Oid,      kInt8ArrayOid,
                                             kInt8ArrayOid, kTextArrayOid, kTextArrayOid, kTextArrayOid};

void put_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

void put_be64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

// bigint in PostgreSQL's binary send format: 8 bytes, big-endian.
std::string binary_int8(std::int64_t v) {
  std::string out;
  put_be64(out, static_cast<std::uint64_t>(v));
  return out;
}

// A one-dimensional array without NULLs in binary send format (array_recv): header, then each
// element's length and bytes.
class BinaryArray {
public:
  BinaryArray(unsigned element_oid, std::size_t n) {
    put_be32(bytes_, 1);  // dimensions
    put_be32(bytes_, 0);  // no NULLs
    put_be32(bytes_, element_oid);
    put_be32(bytes_, std::uint32_t(n));
    put_be32(bytes_, 1);  // lower bound
  }
  void add(std::string_view element) {
    put_be32(bytes_, std::uint32_t(element.size()));
    bytes_.append(element);
  }
  /// A bigint element, written in place (no string per element).
  void add_int8(std::int64_t v) {
    put_be32(bytes_, 8);
    put_be64(bytes_, static_cast<std::uint64_t>(v));
  }
  std::string_view bytes() const { return bytes_; }

private:
  std::string bytes_;
};

Param opt_param(const std::optional<std::string>& v) {
  return v ? Param(std::string_view(*v)) : std::nullopt;
}

} // namespace

void add_search_texts(std::vector<SearchRow>& out, const json::object& event) {
  std::vector<IndexableText> texts = indexable_texts(event);
  if (texts.empty()) return;
  const json::value* seq = member_at(event, 1, "seq");
  for (std::size_t part = 0; part < texts.size(); ++part) {
    SearchRow row;
    row.seq = seq ? safe_int(*seq).value_or(0) : 0;
    row.part = std::int64_t(part);
    row.kind = texts[part].kind;
    row.text = std::move(texts[part].text);
    out.push_back(std::move(row));
  }
}

void with_words(std::vector<SearchRow>& rows) {
  std::erase_if(rows, [](SearchRow& row) {
    std::vector<std::string> words = content_words(row.text);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    row.words.clear();
    for (const std::string& w : words) row.words.append(row.words.empty() ? "" : " ").append(w);
    return row.words.empty();  // nothing a question could match
  });
}

void add_search_rows(std::vector<SearchRow>& out, const json::object& event) {
  std::vector<SearchRow> rows;
  add_search_texts(rows, event);
  with_words(rows);
  for (SearchRow& r : rows) out.push_back(std::move(r));
}

bool insert_search_rows(PgConnection& c, const std::string& id, std::int64_t first, std::int64_t next,
                        const std::vector<SearchRow>& rows) {
  BinaryArray seqs(kInt8Oid, rows.size()), parts(kInt8Oid, rows.size()), kinds(kTextOid, rows.size()),
      texts(kTextOid, rows.size()), words(kTextOid, rows.size());
  for (const SearchRow& r : rows) {
    seqs.add_int8(r.seq);
    parts.add_int8(r.part);
    kinds.add(text_kind_name(r.kind));
    texts.add(r.text);
    words.add(r.words);
  }
  const std::string first_bin = binary_int8(first), next_bin = binary_int8(next);
  if (!rows.empty()) {
    // The key-share lock keeps the session from being deleted (and its id made again) until the texts
    // are in, and lets its writer go on updating the row.
    Transaction texts_tx(c);
    PgResult held = c.exec("SELECT 1 FROM dsh_acp.sessions WHERE owner = current_user AND id = $1 AND indexed_count = "
                           "$2::bigint FOR KEY SHARE",
                           {id, std::to_string(first)});
    if (held.rows() == 0) return false;  // deleted, or indexed meanwhile by a catch-up
    c.exec_prepared(std::string(kIndexTextsName), kIndexTexts, kIndexTextsTypes,
                    {id, first_bin, next_bin, seqs.bytes(), parts.bytes(), kinds.bytes(), texts.bytes(), words.bytes()});
    texts_tx.commit();
  }
  Transaction tx(c);
  c.exec(kQuietCommit);
  PgResult moved = c.exec_prepared(std::string(kIndexedName), kIndexed, {kTextOid, kInt8Oid, kInt8Oid}, {id, first_bin, next_bin});
  if (moved.affected() != 1) return false;  // moved on by another (its texts are the same), or deleted
  tx.commit();
  return true;
}

void insert_session_row(PgConnection& c, const SessionHeader& h, Generation shape, std::string_view header_line) {
  const std::string version = std::to_string(h.version);
  const std::string created = std::to_string(h.createdAt);
  const std::string seed = h.seedLength ? std::to_string(*h.seedLength) : std::string();
  const std::string depth = std::to_string(h.delegationDepth);
  const std::string size = std::to_string(header_line.size() + 1);
  check_log_text(header_line, "PostgreSQL session " + h.id);
  std::optional<std::string> cwd_key;
  if (h.cwd) cwd_key = normalize_cwd(*h.cwd);
  try {
    // owner: the connected role (the column's default); the listing time of an empty session is
    // its creation, as a file's.
    c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, version, created_at, cwd, cwd_key, "
           "parent_session, seed_length, delegation_depth, origin, agent_preset, updated_at, size_bytes, event_count) "
           "VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6, $7, $8, $9::bigint, $10::bigint, $11, $12, $5::bigint, "
           "$13::bigint, 0)",
           {h.id, std::string(store::generation_name(shape)), header_line, version, created, opt_param(h.cwd), opt_param(cwd_key),
            opt_param(h.parentSession), h.seedLength ? Param(seed) : std::nullopt, depth, opt_param(h.origin),
            opt_param(h.agentPreset), size});
  } catch (const PgError& e) {
    // 23505: this role has a session of that id (ids are unique per owner: another role's session
    // of the same id is no conflict, so an insert tells nothing of sessions the role cannot see).
    if (e.sqlstate() == "23505") throw SessionExists(h.id);
    throw;
  }
}

namespace {

void check_lines(const std::vector<LineRow>& rows, const std::string& where) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].line.size() > kMaxLineBytes)
      throw StoreError(where + ": a line of " + std::to_string(rows[i].line.size()) +
                       " bytes is over what PostgreSQL stores in one field (1 GB)");
    // Refused here, before any statement, rather than by the server's encoding check midway.
    check_log_text(rows[i].line, where, std::int64_t(i + 1));
  }
}

// The statements of the batch: rows [begin, end), each within kRowsPerStatement and kBytesPerStatement;
// `bytes` without the lines' '\n'.
struct Part {
  std::size_t begin, end, bytes;
};

std::vector<Part> statement_parts(const std::vector<LineRow>& rows) {
  std::vector<Part> parts;
  for (std::size_t begin = 0; begin < rows.size();) {
    std::size_t end = begin, bytes = 0;
    while (end < rows.size() && end - begin < kRowsPerStatement &&
           (end == begin || bytes + rows[end].line.size() <= kBytesPerStatement))
      bytes += rows[end++].line.size();
    parts.push_back(Part{begin, end, bytes});
    begin = end;
  }
  return parts;
}

// Rows [begin, end) as the statement's array parameters (which point into them: made in place).
struct LineColumns {
  LineColumns(const std::vector<LineRow>& rows, std::size_t begin, std::size_t end)
      : seqs(kInt8Oid, end - begin), types(kTextOid, end - begin), times(kInt8Oid, end - begin),
        lines(kTextOid, end - begin) {
    for (std::size_t i = begin; i < end; ++i) {
      seqs.add_int8(rows[i].seq);
      types.add(rows[i].type);
      times.add_int8(rows[i].time);
      lines.add(rows[i].line);
    }
  }
  BinaryArray seqs, types, times, lines;
};

// Search rows [begin, end) as the statement's array parameters, as LineColumns.
struct TextColumns {
  TextColumns(const std::vector<SearchRow>& search, std::size_t begin, std::size_t end)
      : size(end - begin), seqs(kInt8Oid, size), parts(kInt8Oid, size), kinds(kTextOid, size), texts(kTextOid, size),
        words(kTextOid, size) {
    for (std::size_t i = begin; i < end; ++i) {
      seqs.add_int8(search[i].seq);
      parts.add_int8(search[i].part);
      kinds.add(text_kind_name(search[i].kind));
      texts.add(search[i].text);
      words.add(search[i].words);
    }
  }
  void add_to(std::vector<Param>& params) const {
    for (std::string_view p : {seqs.bytes(), parts.bytes(), kinds.bytes(), texts.bytes(), words.bytes()})
      params.emplace_back(p);
  }
  std::size_t size;
  BinaryArray seqs, parts, kinds, texts, words;
};

[[noreturn]] void throw_log_changed(PgConnection& c, const std::string& where, const std::string& id,
                                    std::int64_t first) {
  PgResult now = c.exec("SELECT event_count FROM dsh_acp.sessions WHERE owner = current_user AND id = $1", {id});
  throw StoreError(where + ": log changed under the writer: it holds " +
                   (now.rows() ? std::string(now.value(0, 0)) + " events" : std::string("no session")) +
                   ", the batch starts at seq " + std::to_string(first));
}

} // namespace

void insert_lines(PgConnection& c, const std::string& where, const std::string& id, const std::vector<LineRow>& rows,
                  const BatchEffect& effect, bool in_transaction, Commit commit, const std::vector<SearchRow>& search,
                  bool deferred) {
  if (rows.empty()) return;
  check_lines(rows, where);
  const std::vector<Part> parts = statement_parts(rows);
  std::optional<Transaction> tx;
  if (!in_transaction && parts.size() > 1) {
    tx.emplace(c);
    if (commit == Commit::quiet) c.exec(kQuietCommit);
    else if (commit == Commit::async) c.exec(kAsyncCommit);
  }
  // A statement that is its own transaction says how it commits itself (no extra round trip).
  const Commit own = in_transaction || tx ? Commit::durable : commit;
  std::size_t next_text = 0;  // the first search row not inserted yet
  for (const auto& [begin, end, line_bytes] : parts) {
    const bool last = end == rows.size();
    const std::int64_t first = rows[begin].seq;
    const std::int64_t next = last ? effect.next_seq : rows[end].seq;
    const std::string next_bin = binary_int8(next), bytes_bin = binary_int8(std::int64_t(line_bytes + (end - begin))),
                      first_bin = binary_int8(first);
    const std::string updated_bin = last && effect.updated_at ? binary_int8(*effect.updated_at) : std::string();
    const LineColumns columns(rows, begin, end);
    std::vector<Param> params{id,
                              next_bin,
                              bytes_bin,
                              last && effect.updated_at ? Param(updated_bin) : std::nullopt,
                              last && effect.title ? Param(*effect.title) : std::nullopt,
                              first_bin,
                              columns.seqs.bytes(),
                              columns.types.bytes(),
                              columns.times.bytes(),
                              columns.lines.bytes()};
    // The texts of the events these lines hold: seqs from this statement's first line's to the next's.
    const std::size_t texts_begin = next_text;
    while (next_text < search.size() && (last || search[next_text].seq < next)) ++next_text;
    const TextColumns texts(search, texts_begin, next_text);
    if (texts.size > 0) texts.add_to(params);
    const Texts what = texts.size > 0 ? Texts::with : deferred ? Texts::deferred : Texts::advance;
    const AppendStatement& st =
        append_statements()[(own == Commit::quiet ? 6 : own == Commit::async ? 3 : 0) + std::size_t(what)];
    PgResult r = c.exec_prepared(st.name, st.sql, texts.size > 0 ? kAppendSearchTypes : kAppendTypes, params);
    if (r.affected() != std::int64_t(end - begin)) throw_log_changed(c, where, id, first);
  }
  if (tx) tx->commit();
}

PgAppender::PgAppender(PgStore& store, PgConnection conn, PgConnection lock_conn, std::string id, Generation shape)
    : store_(&store), conn_(std::move(conn)), lock_conn_(std::move(lock_conn)), id_(std::move(id)), shape_(shape) {}

void PgAppender::lock(const LockWait& wait) {
  store_->lock_session(*lock_conn_, id_, wait);
  locked_ = true;
}

void PgAppender::claim(const LockWait& wait) {
  store_->claim_session(*lock_conn_, id_, wait);
  locked_ = true;
}

void PgAppender::check_held() {
  // The lock's connection says nothing while its transaction holds the lock: anything there means
  // the server ended it (and the lock with it). A batch's own seq check still refuses to continue a
  // log that changed, should the lock go between this look and the batch.
  if (held() && !lock_conn_->untouched()) {
    lost_ = true;
    throw StoreError("PostgreSQL store " + store_->name() + ": connection lost: session " + id_ +
                     ": the server ended the connection holding the writer's lock");
  }
  if (!held()) throw StoreError("PostgreSQL store " + store_->name() + ": session " + id_ + ": the writer lost its lock");
}

void PgAppender::write(KnownLog& log, const std::string& lines, const std::vector<json::object>& records, bool sync) {
  check_held();
  BatchEffect effect;
  effect.first_seq = log.state.count();
  effect.next_seq = effect.first_seq + std::int64_t(records.size());
  effect.bytes = lines.size();
  std::vector<LineRow> rows;
  rows.reserve(records.size());
  std::vector<SearchRow> search;
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
    add_search_texts(search, r);
  }
  if (at != lines.size()) throw StoreError("internal: a batch has more lines than records");
  // The texts are indexed after the commit, off this path (PgStore's indexer). A batch without any
  // moves the session's indexed_count on itself, unless an earlier batch's texts are still waiting
  // for the indexer: then its range goes there too, or the count would stop at that batch's end.
  const bool deferred = !search.empty() || store_->index_pending(id_);
  try {
    if (!log.on_disk) {
      // Published with its header in the batch's transaction: the session appears whole or not at all.
      const std::string header_line = support::to_json_text(header_record(log.header));
      Transaction tx(*conn_);
      if (!sync) conn_->exec(kAsyncCommit);  // the row's insert announces the session
      insert_session_row(*conn_, log.header, shape_, header_line);
      insert_lines(*conn_, log.path, id_, rows, effect, true, Commit::durable, {}, deferred);
      tx.commit();
      header_line_ = header_line;
      log.on_disk = true;
    } else {
      // The first unsynced batch after a durable commit announces itself (a turn's start, its title,
      // seen elsewhere even if this writer dies mid-turn); later ones leave it to the next durable
      // commit or the release.
      insert_lines(*conn_, log.path, id_, rows, effect, false,
                   sync ? Commit::durable : unsynced_ ? Commit::quiet : Commit::async, {}, deferred);
    }
    unsynced_ = !sync;
    if (deferred) store_->index_later(id_, effect.first_seq, effect.next_seq, std::move(search));
  } catch (const PgError& e) {
    // The lock went with the connection: this writer is done.
    if (connection_gone(e) || !conn_->ok()) lost_ = true;
    throw store_->named(e);
  }
}

void PgAppender::committed(const KnownLog& log) { store_->remember(log, shape_, header_line_); }

void PgAppender::sync(KnownLog& log) {
  if (!unsynced_) return;
  check_held();
  try {
    // A commit waits for the WAL flush only when its transaction wrote WAL: a row update that
    // changes nothing is the smallest such write, and the flush covers every earlier commit.
    PgResult r =
        conn_->exec("UPDATE dsh_acp.sessions SET event_count = event_count WHERE owner = current_user AND id = $1", {id_});
    // No row, no WAL written, no flush: the batches before could not be made durable.
    if (r.affected() != 1)
      throw StoreError(log.path + ": the session's row is gone; its unsynced batches could not be made durable");
    unsynced_ = false;
  } catch (const PgError& e) {
    if (connection_gone(e) || !conn_->ok()) lost_ = true;
    throw store_->named(e);
  }
}

void PgAppender::release() noexcept {
  // Neither is waited for: the answer to the prompt need not wait for the lock's release.
  if (lock_conn_) {
    // The lock's transaction ends (also one a failed lock() left open); a connection that could not
    // be told is closed, and the lock goes with it.
    bool reusable = lock_conn_->ok(), owes = false;
    if (reusable && lock_conn_->in_transaction()) reusable = owes = store_->send_release(*lock_conn_);
    store_->give_back(std::move(*lock_conn_), reusable, owes);
    lock_conn_.reset();
  }
  locked_ = false;
  if (conn_) {
    bool reusable = !lost_ && conn_->ok(), owes = false;
    // The announcement of quiet batches no durable commit announced (kQuietCommit).
    if (reusable && unsynced_) reusable = owes = store_->send_announcement(*conn_);
    store_->give_back(std::move(*conn_), reusable, owes);
    conn_.reset();
  }
}

} // namespace acp::store::pg
