#include "store/content_index.hpp"

#include "store/collation.hpp"
#include "store/errors.hpp"
#include "store/event_model.hpp"
#include "store/match_score.hpp"
#include "store/file_io.hpp"
#include "store/line_text.hpp"
#include "store/log_scan.hpp"
#include "support/log.hpp"
#include "support/file_io.hpp"

#include <boost/json/object.hpp>

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

namespace acp::store {

namespace json = boost::json;

namespace {

// Bumped whenever what is indexed or how changes: an index of another schema is rebuilt.
constexpr const char* kSchema = "2";
// A doc (one FTS row) holds one turn's texts at most, and is cut at about this many bytes.
constexpr std::size_t kDocBytes = 16 * 1024;
// Sessions and text bytes per transaction while catching up: fewer commits, bounded WAL growth.
constexpr std::size_t kGroupSessions = 256, kGroupBytes = 8u << 20;
// A log's first bytes hashed to tell a continuation from a log written again.
constexpr std::size_t kHeadBytes = 4096;
// The background queue: sessions and text bytes waiting; past either, batches are dropped and
// the next search's catch-up reads those logs instead.
constexpr std::size_t kQueueSessions = 1024, kQueueBytes = 16u << 20;
// How long the indexer lets a session's batches gather before indexing them (well inside the
// 100 ms in which a turn must be searchable), and its nice value.
constexpr std::chrono::milliseconds kGather{10};
constexpr int kWorkerNice = 10;

class SqliteError : public std::runtime_error {
public:
  SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int primary() const noexcept { return code_ & 0xff; }

private:
  int code_;
};

[[noreturn]] void fail(sqlite3* db, int rc, std::string_view what) {
  throw SqliteError(rc, std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

class Stmt {
public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    int rc = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, "prepare");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& bind(int i, std::string_view v) {
    check(sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  /// True for a row, false when done.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, "step");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double dbl(int c) const { return sqlite3_column_double(s_, c); }
  std::string text(int c) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string(p, std::size_t(sqlite3_column_bytes(s_, c))) : std::string();
  }

private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// One write transaction; rolled back unless committed. IMMEDIATE: another process's writer is
// waited for (busy timeout) before anything is read, so what we read stays true until we commit.
class Tx {
public:
  Tx() = default;
  explicit Tx(sqlite3* db) { begin(db); }
  ~Tx() {
    if (db_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  void begin(sqlite3* db) {
    exec(db, "BEGIN IMMEDIATE");
    db_ = db;
  }
  bool active() const noexcept { return db_ != nullptr; }
  void commit() {
    exec(db_, "COMMIT");  // a failed commit is rolled back by the destructor
    db_ = nullptr;
  }

private:
  static void exec(sqlite3* db, const char* sql) {
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, sql);
  }
  sqlite3* db_ = nullptr;
};

bool damaged(const SqliteError& e) {
  return e.primary() == SQLITE_CORRUPT || e.primary() == SQLITE_NOTADB || e.primary() == SQLITE_SCHEMA;
}

std::int64_t seq_of(const json::object& e) {
  const json::value* v = e.if_contains("seq");
  return v && v->is_int64() ? v->get_int64() : -1;
}

bool is_turn_start(const json::object& e) {
  const json::value* v = e.if_contains("type");
  return v && v->is_string() && v->get_string() == "turn/start";
}

std::string quoted(std::string_view token) {
  std::string out = "\"";
  for (char c : token) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// One question term as an FTS5 expression, a quoted string: the question's words never act as
// query syntax (AND, NEAR, column filters, '*'). The index's tokenizer splits at '_', which
// content_terms keeps inside a word, and detail=column has no phrase queries, so a term of several
// tokens is their AND. "" when the term holds no token.
std::string term_expression(const std::string& term) {
  std::string out;
  int parts = 0;
  for (std::size_t at = 0; at <= term.size();) {
    std::size_t end = std::min(term.find('_', at), term.size());
    if (end > at) out += (parts++ ? " AND " : "") + quoted(std::string_view(term).substr(at, end - at));
    at = end + 1;
  }
  return parts > 1 ? "(" + out + ")" : out;
}

// FNV-1a: stable across builds and processes (the hash is stored).
std::int64_t head_hash(int fd, std::uint64_t len, const std::string& path) {
  std::string bytes = pread_some(fd, 0, std::size_t(len), path);
  if (bytes.size() != len) return 0;
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return std::int64_t(h);
}

// The number of rows of the FTS table (FTS5 keeps it; a contentless table has no cheap count(*)).
void recall_rows(const Fts5ExtensionApi* api, Fts5Context* ctx, sqlite3_context* out, int, sqlite3_value**) {
  sqlite3_int64 rows = 0;
  if (api->xRowCount(ctx, &rows) != SQLITE_OK) {
    sqlite3_result_error(out, "recall_rows: no row count", -1);
    return;
  }
  sqlite3_result_int64(out, rows);
}

void register_rank(sqlite3* db) {
  fts5_api* fts = nullptr;
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_pointer(s, 1, static_cast<void*>(&fts), "fts5_api_ptr", nullptr);
    sqlite3_step(s);
  }
  sqlite3_finalize(s);
  if (!fts) throw SqliteError(SQLITE_ERROR, "this SQLite has no FTS5");
  rc = fts->xCreateFunction(fts, "recall_rows", nullptr, recall_rows, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, "recall_rows");
}

// The events of a batch's text from seq `start` on that have texts or start a turn; nullopt when a
// line is not an event as we write them (the log is read instead).
std::optional<std::vector<CommittedEvents::Event>> batch_events(std::string_view lines, std::int64_t start) {
  std::vector<CommittedEvents::Event> events;
  while (!lines.empty()) {
    const std::size_t end = std::min(lines.find('\n'), lines.size());
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(std::min(end + 1, lines.size()));
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = parse_stored_line(line, ec);
    if (ec || !v.is_object()) return std::nullopt;
    json::object& event = v.get_object();
    // In the shape the log's generation writes (a 0.1 root's records differ): read as a scan reads it.
    normalise_event(event);
    const std::int64_t seq = seq_of(event);
    if (seq < 0) return std::nullopt;
    if (seq < start) continue;
    CommittedEvents::Event e{seq, is_turn_start(event), indexable_texts(event)};
    if (e.turn_start || !e.texts.empty()) events.push_back(std::move(e));
  }
  return events;
}

void remove_db_files(const std::string& file) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((file + suffix).c_str());
}

} // namespace

ContentIndex::ContentIndex(std::string file, std::string root_key, Encoding encoding)
    : file_(std::move(file)), root_key_(std::move(root_key)), encoding_(encoding) {
  try {
    open_db();
  } catch (const SqliteError& e) {
    // Only a damaged or foreign file is thrown away, never one another process holds busy.
    close_db();
    if (!damaged(e)) throw StoreError(std::string("content index: ") + e.what());
    reset_db(e.what());
  }
  inotify_fd_ = support::UniqueFd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  worker_ = std::jthread([this](std::stop_token st) { worker(st); });
}

ContentIndex::~ContentIndex() {
  worker_.request_stop();
  if (worker_.joinable()) worker_.join();
  close_db();
}

void ContentIndex::read_changes() {
  if (!inotify_fd_) return;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(inotify_fd_.get(), buf, sizeof buf);
    if (n <= 0) break;  // EAGAIN: nothing more
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      at += ssize_t(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) overflow_ = true;
      auto dir = watched_.find(ev->wd);
      if (dir == watched_.end()) continue;
      if (ev->mask & (IN_IGNORED | IN_MOVE_SELF)) {
        // The directory is gone or moved: the next catch-up walks, and watches what is there now.
        if (ev->mask & IN_MOVE_SELF) ::inotify_rm_watch(inotify_fd_.get(), ev->wd);
        watches_.erase(dir->second);
        watched_.erase(dir);
        unwatched_ = true;
      } else if (ev->len > 0) {
        dirty_.insert(dir->second + "/" + ev->name);
      }
    }
  }
}

bool ContentIndex::may_have_changed(const std::string& path, const std::unordered_set<std::string>& dirty) {
  if (!inotify_fd_) return true;
  const std::string dir = path.substr(0, path.rfind('/'));
  auto w = watches_.find(dir);
  if (w == watches_.end()) {
    // Watched from now on; what happened before is found by the stat that follows.
    const int wd = ::inotify_add_watch(inotify_fd_.get(), dir.c_str(),
                                       IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                           IN_MOVED_TO | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW);
    watches_.emplace(dir, Watch{wd, catch_ups_});
    if (wd >= 0) watched_[wd] = dir;
    else unwatched_ = true;
    return true;
  }
  if (w->second.wd < 0) unwatched_ = true;
  // Every log of a directory watched during this catch-up is looked at, not only the first.
  return w->second.wd < 0 || w->second.since == catch_ups_ || dirty.contains(path);
}

void ContentIndex::close_db() noexcept {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
  data_version_ = -1;
  records_.clear();
  ids_.clear();
}

void ContentIndex::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, sql);
}

void ContentIndex::open_db() {
  close_db();
  if (!file_.empty()) {
    const std::string dir = file_.substr(0, file_.rfind('/'));
    if (!dir.empty() && !support::make_dirs(dir, 0700))
      throw SqliteError(SQLITE_CANTOPEN, "cannot create " + dir + ": " + std::strerror(errno));
    // Created here so it is private from the start; SQLite gives its -wal and -shm the same mode.
    UniqueFd fd = open_nofollow(file_, O_RDWR | O_CREAT, 0600);
    if (!fd) throw SqliteError(SQLITE_CANTOPEN, "cannot create " + file_ + ": " + std::strerror(errno));
  }
  int rc = sqlite3_open_v2(file_.empty() ? ":memory:" : file_.c_str(), &db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close_db();
    throw SqliteError(rc, "open " + file_ + ": " + why);
  }
  sqlite3_extended_result_codes(db_, 1);
  register_rank(db_);
  // A search waits this long for another process's transaction (a `dsh-acp store index` commits
  // every few MB) before giving up on the index for that search.
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  // WAL with NORMAL: a killed process loses nothing committed; a power cut may lose the last
  // transactions, which the next catch-up redoes from the logs.
  exec("PRAGMA synchronous=NORMAL");
  exec("PRAGMA journal_size_limit=16777216");
  exec("PRAGMA cache_size=-4096");
  bool fresh = false;
  {
    Stmt s(db_, "SELECT count(*) FROM sqlite_schema");
    s.step();
    fresh = s.i64(0) == 0;
  }
  if (fresh) {
    Tx tx(db_);
    exec("CREATE TABLE meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID");
    exec("CREATE TABLE sessions(sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, "
         "mtime INTEGER NOT NULL, ino INTEGER NOT NULL, count INTEGER NOT NULL, bytes INTEGER NOT NULL, "
         "head INTEGER NOT NULL, head_len INTEGER NOT NULL)");
    exec("CREATE TABLE docs(rowid INTEGER PRIMARY KEY AUTOINCREMENT, sid INTEGER NOT NULL, "
         "first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL)");
    exec("CREATE INDEX docs_sid ON docs(sid)");
    exec("CREATE VIRTUAL TABLE fts USING fts5(text, content='', detail=column, columnsize=0, "
         "tokenize='unicode61 remove_diacritics 2')");
    Stmt m(db_, "INSERT INTO meta(k, v) VALUES ('schema', ?1), ('root', ?2), ('orphans', 0)");
    m.bind(1, std::string_view(kSchema)).bind(2, root_key_).run();
    tx.commit();
  } else {
    std::string schema, root;
    Stmt s(db_, "SELECT k, v FROM meta WHERE k IN ('schema', 'root')");
    while (s.step()) (s.text(0) == "schema" ? schema : root) = s.text(1);
    if (schema != kSchema || root != root_key_)
      throw SqliteError(SQLITE_NOTADB, "the content index " + file_ + " is another root's or schema's");
    Stmt check(db_, "SELECT count(*) FROM fts WHERE fts MATCH 'x'");
    check.step();
  }
}

void ContentIndex::reset_db(const std::string& why) {
  close_db();
  if (!file_.empty()) {
    log::warn("content index " + file_ + " cannot be used (" + why + "): building it again");
    remove_db_files(file_);
  }
  try {
    open_db();
  } catch (const SqliteError& e) {
    close_db();
    throw StoreError(std::string("content index: ") + e.what());
  }
}

template <class F>
auto ContentIndex::guarded(F&& f) -> decltype(f()) {
  std::lock_guard g(mu_);
  for (int attempt = 0;; ++attempt) {
    try {
      if (!db_) open_db();
      return f();
    } catch (const SqliteError& e) {
      // A damaged file is thrown away and rebuilt from the logs; anything else (a full disk, a
      // lock held too long) makes the caller do without the index this time.
      if (!damaged(e) || attempt > 0) throw StoreError(std::string("content index: ") + e.what());
      reset_db(e.what());
    }
  }
}

void ContentIndex::reload_if_changed() {
  Stmt s(db_, "PRAGMA data_version");
  s.step();
  // data_version changes when another connection (another process) committed: our records may
  // then be stale.
  if (s.i64(0) != data_version_) {
    load_records();
    data_version_ = s.i64(0);
  }
}

void ContentIndex::load_records() {
  reloaded_ = true;
  records_.clear();
  ids_.clear();
  Stmt s(db_, "SELECT sid, id, size, mtime, ino, count, bytes, head, head_len FROM sessions");
  while (s.step()) {
    Record r{s.i64(0),  std::uint64_t(s.i64(2)), std::uint64_t(s.i64(4)), std::uint64_t(s.i64(6)),
             s.i64(3),  s.i64(5),                s.i64(7),                s.i64(8)};
    std::string id = s.text(1);
    ids_[r.sid] = id;
    records_[std::move(id)] = r;
  }
}

std::optional<ContentIndex::Record> ContentIndex::db_record(const std::string& id) {
  Stmt s(db_, "SELECT sid, size, mtime, ino, count, bytes, head, head_len FROM sessions WHERE id = ?1");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return Record{s.i64(0), std::uint64_t(s.i64(1)), std::uint64_t(s.i64(3)), std::uint64_t(s.i64(5)),
                s.i64(2), s.i64(4),                s.i64(6),                s.i64(7)};
}

void ContentIndex::forget_rows(std::int64_t sid) {
  Stmt d(db_, "DELETE FROM docs WHERE sid = ?1");
  d.bind(1, sid).run();
  const std::int64_t n = sqlite3_changes64(db_);
  if (n > 0) Stmt(db_, "UPDATE meta SET v = v + ?1 WHERE k = 'orphans'").bind(1, n).run();
}

std::int64_t ContentIndex::put_record(const std::string& id, const Record& r) {
  Stmt s(db_,
         "INSERT INTO sessions(id, size, mtime, ino, count, bytes, head, head_len) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE SET size = ?2, mtime = ?3, ino = ?4, "
         "count = ?5, bytes = ?6, head = ?7, head_len = ?8 RETURNING sid");
  s.bind(1, id).bind(2, std::int64_t(r.size)).bind(3, r.mtime_ns).bind(4, std::int64_t(r.ino)).bind(5, r.count);
  s.bind(6, std::int64_t(r.bytes)).bind(7, r.head).bind(8, r.head_len);
  s.step();
  return s.i64(0);
}

std::size_t ContentIndex::insert_docs(std::int64_t sid, const std::vector<CommittedEvents::Event>& events,
                                      std::int64_t start) {
  Stmt doc(db_, "INSERT INTO docs(sid, first_seq, last_seq) VALUES (?1, ?2, ?3)");
  Stmt fts(db_, "INSERT INTO fts(rowid, text) VALUES (?1, ?2)");
  std::string text;
  std::int64_t first = -1, last = -1;
  std::size_t added = 0;
  auto flush = [&] {
    if (text.empty()) return;
    doc.reset();
    doc.bind(1, sid).bind(2, first).bind(3, last).run();
    fts.reset();
    fts.bind(1, sqlite3_last_insert_rowid(db_)).bind(2, text).run();
    added += text.size();
    text.clear();
    first = -1;
  };
  for (const CommittedEvents::Event& e : events) {
    if (e.seq < start) continue;  // indexed already
    if (e.turn_start) flush();
    for (const IndexableText& t : e.texts) {
      if (first < 0) first = e.seq;
      last = e.seq;
      text += t.text;
      text += '\n';
    }
    if (text.size() >= kDocBytes) flush();
  }
  flush();
  return added;
}

std::size_t ContentIndex::index_log(const ContentLog& log, std::vector<std::pair<std::string, Record>>& updated,
                                    std::stop_token stop) {
  UniqueFd fd = open_nofollow(log.path, O_RDONLY);
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return 0;  // gone since the listing: the next catch-up forgets it
  ++logs_read_;
  std::optional<Record> rec = db_record(log.id);
  Record now{rec ? rec->sid : 0, std::uint64_t(st.st_size), std::uint64_t(st.st_ino), 0, mtime_ns(st), 0, 0, 0};
  if (rec && rec->size == now.size && rec->ino == now.ino && rec->mtime_ns == now.mtime_ns) {
    updated.emplace_back(log.id, *rec);  // another process caught up with it already
    return 0;
  }
  // Shrunk, replaced or written again: what was indexed may no longer be in the log.
  bool scratch = !rec || now.size < rec->size || now.ino != rec->ino ||
                 head_hash(fd.get(), std::uint64_t(rec->head_len), log.path) != rec->head;
  now.head_len = std::int64_t(std::min<std::uint64_t>(now.size, kHeadBytes));
  now.head = head_hash(fd.get(), std::uint64_t(now.head_len), log.path);
  for (;;) {
    const std::int64_t start = scratch ? 0 : rec->count;
    std::vector<CommittedEvents::Event> events;
    auto sink = [&](json::object&& e) {
      const std::int64_t seq = seq_of(e);
      if (seq < start) return;
      CommittedEvents::Event ev{seq, is_turn_start(e), indexable_texts(e)};
      if (ev.turn_start || !ev.texts.empty()) events.push_back(std::move(ev));
    };
    ScanResult scan;
    try {
      scan = scan_log(fd.get(), log.path, encoding_, sink, stop, EventLifetime::transient);
    } catch (const ReadCancelled&) {
      throw;
    } catch (const StoreError& e) {
      // A log that cannot be read is not found by its words (as with the plain scan); its state is
      // recorded so it is not read again until it changes.
      log::debug("content index: " + std::string(e.what()));
      if (rec && scratch) forget_rows(rec->sid);
      now.count = rec && !scratch ? rec->count : 0;
      now.bytes = rec && !scratch ? rec->bytes : 0;
      now.sid = put_record(log.id, now);
      updated.emplace_back(log.id, now);
      return 0;
    }
    if (!scratch && scan.state.count() < start) {  // fewer events than indexed: rewritten
      scratch = true;
      continue;
    }
    if (rec && scratch) forget_rows(rec->sid);
    now.count = scan.state.count();
    now.bytes = scan.committed_bytes;
    now.sid = put_record(log.id, now);
    updated.emplace_back(log.id, now);
    return insert_docs(now.sid, events);
  }
}

IndexProgress ContentIndex::catch_up(const ContentListing& listing, const IndexProgressFn& progress,
                                     std::stop_token stop, bool compact) {
  return guarded([&] {
    reload_if_changed();
    IndexProgress p;
    p.total = listing.logs->size();
    std::vector<const ContentLog*> changed = changed_logs(listing, compact);
    p.done = p.total - changed.size();
    if (compact && rebuild_if_mostly_unreachable()) {
      changed.clear();
      p.done = 0;
      for (const ContentLog& log : *listing.logs) changed.push_back(&log);
    }
    p.indexed = changed.size();
    if (progress) progress(p);
    index_logs(changed, p, progress, stop);
    overflow_ = false;
    return p;
  });
}

std::vector<const ContentLog*> ContentIndex::changed_logs(const ContentListing& listing, bool everything) {
  // The events read now cover every change made before this catch-up began. If it does not get
  // through, every log is looked at next time.
  read_changes();
  ++catch_ups_;
  std::unordered_set<std::string> dirty;
  dirty.swap(dirty_);
  everything = everything || overflow_;
  overflow_ = true;
  // Versions only grow: a search that took its listing before another's newer one keeps the newer.
  const bool same_listing = listing_.logs && listing_.version >= listing.version;
  if (!same_listing) {
    listing_ = listing;
    by_id_.clear();
    by_path_.clear();
    for (const ContentLog& log : *listing.logs) {
      by_id_.emplace(log.id, &log);
      by_path_.emplace(log.path, &log);
    }
  }
  std::vector<const ContentLog*> changed;
  auto look_at = [&](const ContentLog& log) {
    struct stat st {};
    auto it = records_.find(log.id);
    // Called for every log looked at, so each one's directory is watched from now on.
    const bool named = may_have_changed(log.path, dirty);
    if (!everything && it != records_.end() && !named) return;
    if (!lstat_path(log.path, st) ||
        (it != records_.end() && it->second.size == std::uint64_t(st.st_size) &&
         it->second.ino == std::uint64_t(st.st_ino) && it->second.mtime_ns == mtime_ns(st)))
      return;
    changed.push_back(&log);
  };
  // Unless the listing changed, a record was dropped by another process or a directory cannot be
  // watched, only the logs an event named can have changed.
  const bool walk = !same_listing || everything || reloaded_ || unwatched_ || !inotify_fd_;
  reloaded_ = unwatched_ = false;
  if (!walk) {
    for (const std::string& path : dirty)
      if (auto it = by_path_.find(path); it != by_path_.end()) look_at(*it->second);
    return changed;
  }
  for (const ContentLog& log : *listing_.logs) look_at(log);
  std::vector<std::int64_t> gone;
  for (const auto& [id, r] : records_)
    if (!by_id_.contains(id)) gone.push_back(r.sid);
  if (!gone.empty()) {
    Tx tx(db_);
    for (std::int64_t sid : gone) {
      forget_rows(sid);
      Stmt(db_, "DELETE FROM sessions WHERE sid = ?1").bind(1, sid).run();
    }
    tx.commit();
    for (std::int64_t sid : gone) {
      records_.erase(ids_[sid]);
      ids_.erase(sid);
    }
  }
  return changed;
}

bool ContentIndex::rebuild_if_mostly_unreachable() {
  std::int64_t orphans = 0, docs = 0;
  {
    Stmt s(db_, "SELECT (SELECT v FROM meta WHERE k = 'orphans'), (SELECT count(*) FROM docs)");
    s.step();
    orphans = s.i64(0);
    docs = s.i64(1);
  }
  if (orphans == 0 || orphans * 4 <= docs) return false;
  rebuild_fts();
  return true;
}

void ContentIndex::index_logs(const std::vector<const ContentLog*>& changed, IndexProgress& p,
                              const IndexProgressFn& progress, std::stop_token stop) {
  std::vector<std::pair<std::string, Record>> updated;
  std::size_t group_sessions = 0, group_bytes = 0;
  Tx tx;
  auto commit = [&] {
    if (!tx.active()) return;
    tx.commit();
    for (auto& [id, r] : updated) {
      ids_[r.sid] = id;
      records_[id] = r;
    }
    updated.clear();
    group_sessions = group_bytes = 0;
    if (progress) progress(p);
  };
  for (const ContentLog* log : changed) {
    if (stop.stop_requested()) throw ReadCancelled();
    if (!tx.active()) tx.begin(db_);
    group_bytes += index_log(*log, updated, stop);
    ++p.done;
    if (++group_sessions >= kGroupSessions || group_bytes >= kGroupBytes) commit();
  }
  commit();
}

void ContentIndex::rebuild_fts() {
  Tx tx(db_);
  exec("INSERT INTO fts(fts) VALUES ('delete-all')");
  exec("DELETE FROM docs");
  exec("DELETE FROM sessions");
  exec("UPDATE meta SET v = 0 WHERE k = 'orphans'");
  tx.commit();
  records_.clear();
  ids_.clear();
}

namespace {

// A question's terms as the index ranks them: a row scores the sum of the IDFs of the terms it
// holds (the index keeps no positions, so a term held counts once, and rows are not weighed by
// length: a row is one turn, ~16 KiB at most). The IDF is BM25's always-positive form, so a term
// in most rows still counts, as it must in a small store.
struct RankedTerm {
  std::string expression;
  double df = 0;  ///< rows holding it, counted or estimated
  double idf = 0;
};

// Document frequencies are counted on the newest rows only: past this many, the term's share of
// those rows stands for its share of all (an estimate only common terms get, whose IDF is small).
constexpr std::int64_t kCountedRows = 2000;
// The rarest terms whose sets are enumerated (2^n - 1 of them); rows holding only commoner ones
// come after all of those.
constexpr std::size_t kRankedTerms = 6;

// The question's terms some row holds, with their IDFs, rarest first.
std::vector<RankedTerm> rank_terms(sqlite3* db_, const std::vector<std::string>& terms) {
  std::int64_t low = 0, high = 0, rows = -1;
  {
    Stmt s(db_, "SELECT (SELECT min(rowid) FROM docs), (SELECT max(rowid) FROM docs)");
    s.step();
    low = s.i64(0);
    high = s.i64(1);
  }
  Stmt newest(db_, "SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2");
  std::vector<RankedTerm> ranked;
  for (const std::string& term : terms) {
    std::string expression = term_expression(term);
    if (expression.empty()) continue;
    newest.reset();
    newest.bind(1, expression).bind(2, kCountedRows);
    std::int64_t count = 0, last = 0;
    while (newest.step()) {
      ++count;
      last = newest.i64(0);
    }
    if (count == 0) continue;  // no row holds it: it can neither match nor rank
    if (rows < 0) {
      Stmt r(db_, "SELECT recall_rows(fts) FROM fts WHERE fts MATCH ?1 LIMIT 1");
      r.bind(1, expression);
      rows = r.step() ? r.i64(0) : 0;
    }
    double estimate = double(count);
    if (count == kCountedRows && high > last)
      estimate = double(count) * double(high - low + 1) / double(high - last + 1);
    ranked.push_back({std::move(expression), estimate, 0});
  }
  for (RankedTerm& t : ranked) {
    const double d = std::min(t.df, double(std::max<std::int64_t>(rows, 1)));
    t.idf = std::log(1 + (double(rows) - d + 0.5) / (d + 0.5));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedTerm& a, const RankedTerm& b) { return a.idf > b.idf; });
  return ranked;
}

} // namespace

std::vector<ContentHit> ContentIndex::search(const ContentQuery& query, std::stop_token stop) {
  std::vector<ContentHit> hits;
  std::vector<std::string> terms = content_terms(query.words);
  if (terms.empty() || query.limit == 0) return hits;
  std::vector<Found> found = guarded([&] { return ranked_sessions(terms, query, stop); });
  // Outside the lock: the texts come from the logs (the index holds none).
  for (const Found& f : found)
    if (std::optional<ContentHit> hit = read_hit(f, terms, stop)) hits.push_back(std::move(*hit));
  return hits;
}

std::vector<ContentIndex::Found> ContentIndex::ranked_sessions(const std::vector<std::string>& terms,
                                                               const ContentQuery& query, std::stop_token stop) {
  std::vector<Found> found;
  reload_if_changed();
  std::vector<RankedTerm> ranked = rank_terms(db_, terms);
  if (ranked.empty()) return found;
  // Every row holds exactly one set of the ranked terms, and every row of a set scores the same:
  // the sets, best first, each streamed newest row first, give the rows in score order without
  // ranking or sorting every matching row (most of a common term's rows are never read).
  const std::size_t n = std::min(ranked.size(), kRankedTerms);
  std::vector<std::pair<double, unsigned>> sets;
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    double score = 0;
    for (std::size_t t = 0; t < n; ++t)
      if (mask & (1u << t)) score += ranked[t].idf;
    sets.emplace_back(score, mask);
  }
  std::sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  const std::unordered_set<std::string_view> excluded(query.exclude.begin(), query.exclude.end());
  Stmt rows(db_, "SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid DESC");
  Stmt doc(db_, "SELECT sid, first_seq, last_seq FROM docs WHERE rowid = ?1");
  std::unordered_set<std::int64_t> seen;
  std::vector<std::pair<double, std::string>> queries;
  for (const auto& [score, mask] : sets) {
    std::string held, missing;
    for (std::size_t t = 0; t < n; ++t) {
      std::string& to = mask & (1u << t) ? held : missing;
      to += (to.empty() ? "" : (&to == &held ? " AND " : " OR ")) + ranked[t].expression;
    }
    queries.emplace_back(score, missing.empty() ? held : "(" + held + ") NOT (" + missing + ")");
  }
  if (ranked.size() > n) {
    // Rows holding only commoner terms than those still match, last, scored by the rarest of them.
    std::string rest, first;
    for (std::size_t t = 0; t < ranked.size(); ++t)
      (t < n ? first : rest) += std::string((t < n ? first : rest).empty() ? "" : " OR ") + ranked[t].expression;
    queries.emplace_back(ranked[n].idf, "(" + rest + ") NOT (" + first + ")");
  }
  for (const auto& [score, expression] : queries) {
    if (found.size() >= query.limit) break;
    rows.reset();
    rows.bind(1, expression);
    while (found.size() < query.limit && rows.step()) {
      if (stop.stop_requested()) throw ReadCancelled();
      doc.reset();
      doc.bind(1, rows.i64(0));
      // Rows of docs forgotten (a session re-indexed or deleted) have no doc: passed over.
      if (!doc.step()) continue;
      const std::int64_t sid = doc.i64(0);
      if (!seen.insert(sid).second) continue;  // a session's first row is its best
      auto id = ids_.find(sid);
      if (id == ids_.end() || excluded.contains(id->second)) continue;
      auto log = by_id_.find(id->second);
      if (log == by_id_.end()) continue;  // deleted, or not listed: never returned
      found.push_back({id->second, log->second->path, doc.i64(1), doc.i64(2), score});
    }
  }
  return found;
}

std::optional<ContentHit> ContentIndex::read_hit(const Found& f, const std::vector<std::string>& terms,
                                                 std::stop_token stop) {
  struct Best {
    double score = -1;
    std::int64_t seq = 0;
    TextKind kind = TextKind::user;
    std::string text;
  } best;
  // Only the matched row's events are looked at; the read stops after them.
  std::stop_source enough;
  auto sink = [&](json::object&& e) {
    if (stop.stop_requested()) throw ReadCancelled();
    const std::int64_t seq = seq_of(e);
    if (seq > f.last) {
      enough.request_stop();
      return;
    }
    if (seq < f.first) return;
    for (IndexableText& t : indexable_texts(e)) {
      // A text matched through folding (diacritics) the substring count cannot see still shows.
      double sc = match_score(lowercase_en_us(t.text), terms);
      if (sc > best.score) best = {sc, seq, t.kind, std::move(t.text)};
    }
  };
  UniqueFd fd = open_nofollow(f.path, O_RDONLY);
  if (!fd) return std::nullopt;
  try {
    scan_log(fd.get(), f.path, encoding_, sink, enough.get_token(), EventLifetime::transient);
  } catch (const ReadCancelled&) {
    if (stop.stop_requested()) throw;
  } catch (const StoreError&) {
  }
  if (best.score < 0) return std::nullopt;  // the log changed under us: no text to show, no hit
  return ContentHit{f.id, best.seq, best.kind, make_snippet(best.text, terms), f.score};
}

void ContentIndex::apply(const CommittedEvents& b, const std::optional<std::vector<CommittedEvents::Event>>& parsed) {
  reload_if_changed();
  std::vector<std::pair<std::string, Record>> updated;
  Tx tx(db_);
  std::optional<Record> rec = db_record(b.id);
  const bool contiguous = !b.reread && (rec ? rec->ino == b.ino && rec->count >= b.first_seq : b.first_seq == 0);
  if (!contiguous) {
    index_log({b.id, b.path}, updated, {});
  } else if (!rec || rec->count < b.end_seq) {
    if (!parsed) {
      index_log({b.id, b.path}, updated, {});
      tx.commit();
      remember(updated);
      return;
    }
    Record r{rec ? rec->sid : 0, b.size, b.ino, b.size, b.mtime_ns, b.end_seq, 0, 0};
    if (rec) {
      r.head = rec->head;
      r.head_len = rec->head_len;
    } else {
      // A new log: its first bytes, as a catch-up would have hashed them.
      UniqueFd fd = open_nofollow(b.path, O_RDONLY);
      r.head_len = std::int64_t(std::min<std::uint64_t>(b.size, kHeadBytes));
      r.head = fd ? head_hash(fd.get(), std::uint64_t(r.head_len), b.path) : 0;
    }
    r.sid = put_record(b.id, r);
    insert_docs(r.sid, *parsed, rec ? rec->count : 0);
    updated.emplace_back(b.id, r);
  }
  tx.commit();
  remember(updated);
}

void ContentIndex::remember(const std::vector<std::pair<std::string, Record>>& updated) {
  for (auto& [id, r] : updated) {
    ids_[r.sid] = id;
    records_[id] = r;
  }
}

void ContentIndex::post(CommittedEvents batch) {
  const std::size_t bytes = batch.lines.size();
  {
    std::lock_guard g(queue_mu_);
    auto it = queue_.find(batch.id);
    if (it == queue_.end()) {
      if (queue_.size() >= kQueueSessions || queued_bytes_ + bytes > kQueueBytes) return;
      queued_bytes_ += bytes;
      queue_.emplace(batch.id, std::move(batch));
    } else {
      CommittedEvents& q = it->second;
      // Coalesced: one transaction for everything a session committed while the indexer was busy.
      // Anything that does not simply continue the queued batch makes the indexer read the log.
      if (!q.reread && !batch.reread && q.end_seq == batch.first_seq && queued_bytes_ + bytes <= kQueueBytes) {
        queued_bytes_ += bytes;
        q.lines += batch.lines;
      } else {
        q.reread = true;
        queued_bytes_ -= q.lines.size();
        q.lines = std::string();
      }
      q.end_seq = batch.end_seq;
      q.size = batch.size;
      q.ino = batch.ino;
      q.mtime_ns = batch.mtime_ns;
      q.path = std::move(batch.path);
    }
  }
  queue_cv_.notify_all();
}

void ContentIndex::drain() {
  std::unique_lock l(queue_mu_);
  ++draining_;
  queue_cv_.notify_all();
  queue_cv_.wait(l, [&] { return queue_.empty() && !busy_; });
  --draining_;
}

void ContentIndex::worker(std::stop_token stop) {
  // Indexing is background work: where it competes with a prompt for a core, the prompt goes first.
  const pid_t tid = pid_t(::syscall(SYS_gettid));
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, id_t(tid));
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, id_t(tid), std::min(nice + kWorkerNice, 19));
  for (;;) {
    CommittedEvents b;
    {
      std::unique_lock l(queue_mu_);
      const bool was_idle = queue_.empty();
      if (!queue_cv_.wait(l, stop, [&] { return !queue_.empty(); })) return;
      // A turn commits several batches in quick succession: gathered, they are one transaction
      // (and one FTS segment) instead of several. Only after an idle spell: a backlog goes straight
      // through. drain() and a half-full queue end the wait at once.
      if (was_idle)
        queue_cv_.wait_for(l, stop, kGather, [&] {
          return draining_ > 0 || queued_bytes_ >= kQueueBytes / 2 || queue_.size() >= kQueueSessions / 2;
        });
      // At shutdown what is queued is dropped: the next process's first search walks every log.
      if (stop.stop_requested()) return;
      auto it = queue_.begin();
      queued_bytes_ -= it->second.lines.size();
      b = std::move(it->second);
      queue_.erase(it);
      busy_ = true;
    }
    try {
      // Parsed before the index's lock is taken: a search waits only for the SQLite work.
      std::optional<std::vector<CommittedEvents::Event>> events;
      if (!b.reread) events = batch_events(b.lines, b.first_seq);
      guarded([&] { apply(b, events); });
    } catch (const std::exception& e) {
      // The next search's catch-up reads the log instead.
      log::debug("content index: " + std::string(e.what()));
    }
    {
      std::lock_guard g(queue_mu_);
      busy_ = false;
    }
    queue_cv_.notify_all();
  }
}

} // namespace acp::store
