#include "store/pg/pg_store.hpp"

#include "store/content_search.hpp"
#include "store/errors.hpp"
#include "store/import_check.hpp"
#include "store/log_scan.hpp"
#include "store/pg/change_feed.hpp"
#include "store/pg/pg_appender.hpp"
#include "store/pg/pg_indexer.hpp"
#include "store/pg/schema.hpp"
#include "store/pg/url.hpp"
#include "store/records.hpp"
#include "store/repair.hpp"
#include "support/paths.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <stop_token>

namespace acp::store::pg {

namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// What a writer reads of its own session's row (load).
constexpr std::string_view kLoadRow =
    "SELECT header_line, generation, event_count, owner FROM dsh_acp.sessions WHERE owner = current_user AND id = $1";
// The session lock (schema.hpp): its row made when missing (committed at once, so a writer never
// waits for another's insert), then locked in the writer's transaction. Row security keeps every
// other role's statements away from the row.
constexpr std::string_view kMakeLockRow = "INSERT INTO dsh_acp.session_locks (id) VALUES ($1) ON CONFLICT DO NOTHING";
constexpr std::string_view kWaitLock =
    "SELECT true FROM dsh_acp.session_locks WHERE owner = current_user AND id = $1 FOR UPDATE";
// A free lock tried: the transaction opened and the row locked unless another holds it.
std::string try_lock(PgConnection& c, const std::string& id) {
  return "BEGIN; SELECT true FROM dsh_acp.session_locks WHERE owner = current_user AND id = " + c.literal(id) +
         " FOR UPDATE SKIP LOCKED";
}
// The claim of an existing session's lock in one round trip: the session the id names (owner, mine),
// and for the role's own, the lock tried and whether its row exists.
std::string claim(PgConnection& c, const std::string& id) {
  const std::string own = "(SELECT true FROM dsh_acp.session_locks l WHERE l.owner = current_user AND l.id = s.id";
  return "BEGIN; SELECT s.owner, s.owner = current_user, CASE WHEN s.owner = current_user THEN " + own +
         " FOR UPDATE SKIP LOCKED) END, CASE WHEN s.owner = current_user THEN EXISTS " + own +
         ") END FROM dsh_acp.sessions s WHERE s.id = " + c.literal(id) + " ORDER BY s.owner <> current_user, s.owner LIMIT 1";
}
// The announcement of changes no durable commit announced (kQuietCommit).
constexpr std::string_view kAnnounce = "SELECT pg_notify('dsh_acp_sessions', '')";
// Listing pages kept (by query): a client pages through one listing, maybe a few filtered by cwd.
constexpr std::size_t kCachedListings = 32;
// Rows per FETCH of a session's lines, shrunk for big lines so a chunk stays near kFetchBytes.
constexpr std::int64_t kFetchRows = 512;
constexpr std::int64_t kFetchBytes = 8 << 20;

std::optional<std::string> opt(const PgResult& r, int row, int col) {
  auto v = r.get(row, col);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

// Feeds every line of `id` from seq `from` on, in seq order, to fn(line, seq), fetching a chunk of
// rows at a time through a cursor; the next chunk is asked for before this one is read, so the
// server produces it while the caller parses (two chunks in memory at most). Needs the caller's
// transaction.
template <class Fn>
void for_each_line(PgConnection& c, std::string_view owner, const std::string& id, std::int64_t from, Fn&& fn) {
  const std::string from_text = std::to_string(from);
  c.exec("DECLARE dsh_acp_lines NO SCROLL CURSOR FOR SELECT seq, line FROM dsh_acp.events "
         "WHERE owner = $1 AND session_id = $2 AND seq >= $3::bigint ORDER BY seq",
         {owner, id, from_text});
  // A chunk asked for and not taken when fn throws: taken, so the connection can run the rollback.
  struct InFlight {
    PgConnection& c;
    bool pending = false;
    ~InFlight() {
      if (!pending) return;
      try {
        c.receive();
      } catch (const StoreError&) {
      }
    }
  } in_flight{c};
  std::int64_t rows = kFetchRows;
  c.send("FETCH " + std::to_string(rows) + " FROM dsh_acp_lines");
  in_flight.pending = true;
  for (;;) {
    in_flight.pending = false;
    PgResult r = c.receive();
    const int n = r.rows();
    const bool more = n == rows;
    if (more) {
      std::int64_t bytes = 0;
      for (int i = 0; i < n; ++i) bytes += std::int64_t(r.value(i, 1).size());
      rows = std::clamp<std::int64_t>(kFetchBytes / std::max<std::int64_t>(1, bytes / n), 1, kFetchRows);
      c.send("FETCH " + std::to_string(rows) + " FROM dsh_acp_lines");
      in_flight.pending = true;
    }
    for (int i = 0; i < n; ++i) fn(r.value(i, 1), r.int64(i, 0));
    if (!more) break;
  }
  c.exec("CLOSE dsh_acp_lines");
}

// The line as the file reader takes it: strict (every stored line is committed; a bad one is
// corruption, not a torn tail).
PlainLine stored_line(std::string_view text, std::int64_t number) {
  PlainLine l;
  l.text = text;
  l.number = number;
  l.strict = true;
  return l;
}

Generation shape_of(const PgResult& r, int row, int col, const std::string& where) {
  auto g = parse_generation(r.value(row, col));
  if (!g) throw StoreCorrupt(where, 1, "unknown generation \"" + std::string(r.value(row, col)) + "\"");
  return *g;
}

void check_identity(const SessionHeader& h, const std::string& id, const std::string& where) {
  if (h.id != id) throw StoreCorrupt(where, 1, "session header (id \"" + h.id + "\") does not match the row");
}

} // namespace

bool connection_gone(const PgError& e) {
  // 57P01..57P03: the server ended the session (an administrator, a shutdown, a crash restart).
  return e.connection_lost() || e.sqlstate().starts_with("57P0");
}

// ---- the connections ----

class PgStore::Pool {
public:
  Pool(std::string url, ConnectOptions options, std::size_t size, std::string name, PgConnection first)
      : url_(std::move(url)), options_(std::move(options)), size_(std::max<std::size_t>(size, 1)),
        name_(std::move(name)) {
    idle_.push_back(Idle{std::move(first), false});
  }

  /// A connection for the caller alone: an idle one (reconnected when found lost) or a new one.
  /// `counted`: one of the pool's `size` shared ones (waits for one to come back); a writer's own
  /// connection is not counted (the number of sessions being written bounds those).
  PgConnection take(bool counted) {
    std::optional<PgConnection> c;
    bool owes_result = false;
    {
      std::unique_lock g(mu_);
      if (counted) {
        cv_.wait(g, [&] { return in_use_ < size_; });
        ++in_use_;
      }
      if (!idle_.empty()) {
        c.emplace(std::move(idle_.back().c));
        owes_result = idle_.back().owes_result;
        idle_.pop_back();
      }
    }
    try {
      if (c) {
        // A connection whose lock transaction did not end may still hold the lock: a new server session.
        if ((owes_result && !settled(*c)) || !alive(*c)) reconnect([&] { c->reset(); });
      } else {
        reconnect([&] { c.emplace(PgConnection::connect(url_, options_)); });
      }
      return std::move(*c);
    } catch (...) {
      if (counted) done_counted();
      throw;
    }
  }

  /// Back from take(): kept for the next caller when `reusable` and there is room, else closed.
  /// `owes_result`: a statement was sent on it (send_release) and its result is still to be read;
  /// the next take() reads it first.
  void give_back(PgConnection c, bool reusable, bool counted, bool owes_result = false) noexcept {
    std::optional<PgConnection> drop;
    {
      std::lock_guard g(mu_);
      if (reusable && c.ok() && idle_.size() < size_) idle_.push_back(Idle{std::move(c), owes_result});
      else drop.emplace(std::move(c));
      if (counted) --in_use_;
    }
    if (counted) cv_.notify_one();
  }

private:
  // A connection the server ended while it sat idle (a restart, pg_terminate_backend) has told us
  // so: its FATAL message, then the end of the stream, wait on the socket (the end may come a moment
  // after the message). Pool connections LISTEN to nothing, so anything there at all means the
  // server spoke unasked: such a connection is not trusted with a statement (reset instead).
  static bool alive(PgConnection& c) { return c.untouched(); }

  // The result of what send_release() sent: true when it succeeded and left no transaction open
  // (so no lock is held).
  static bool settled(PgConnection& c) noexcept {
    try {
      c.receive();
      return !c.in_transaction();
    } catch (...) {
      return false;
    }
  }

  void done_counted() {
    {
      std::lock_guard g(mu_);
      --in_use_;
    }
    cv_.notify_one();
  }

  // Connects through `attempt`. Within the backoff of a failed attempt the caller first waits out
  // the rest of it (1 s at most, next_backoff; less when another caller connects meanwhile), then tries
  // once: a server that is down is asked once a backoff by a call, not again and again, and the
  // first call after it is back (a restart) connects instead of failing for the rest of the window.
  template <class Fn>
  void reconnect(Fn&& attempt) {
    {
      std::unique_lock g(mu_);
      const auto until = retry_at_;
      retry_cv_.wait_until(g, until, [&] { return retry_at_ < until || std::chrono::steady_clock::now() >= until; });
    }
    try {
      attempt();
    } catch (const PgError&) {
      std::lock_guard g(mu_);
      backoff_ = next_backoff(backoff_);
      retry_at_ = std::chrono::steady_clock::now() + backoff_;
      throw;
    }
    {
      std::lock_guard g(mu_);
      backoff_ = 0ms;
      retry_at_ = {};
    }
    retry_cv_.notify_all();
  }

  const std::string url_;
  const ConnectOptions options_;
  const std::size_t size_;
  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  struct Idle {
    PgConnection c;
    bool owes_result = false;
  };
  std::vector<Idle> idle_;          ///< guarded by mu_
  std::size_t in_use_ = 0;          ///< counted connections taken
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point retry_at_{};  ///< guarded by mu_
  std::condition_variable retry_cv_;                   ///< a reconnect succeeded
};

class PgStore::Lease {
public:
  explicit Lease(Pool& pool) : pool_(&pool), c_(pool.take(true)) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  /// A connection left inside a transaction (a rollback that failed) is not handed on.
  ~Lease() {
    const bool reusable = !c_.in_transaction();
    pool_->give_back(std::move(c_), reusable, true);
  }
  PgConnection& operator*() { return c_; }
  PgConnection* operator->() { return &c_; }

private:
  Pool* pool_;
  PgConnection c_;
};

PgStore::Lease PgStore::lease() { return Lease(*pool_); }

class PgStore::HeldLock {
public:
  HeldLock(PgStore& store, const std::string& id, const LockWait& wait) : store_(store), c_(store.pool_->take(false)) {
    try {
      store_.lock_session(c_, id, wait);
    } catch (...) {
      const bool reusable = !c_.in_transaction();
      store_.give_back(std::move(c_), reusable);
      throw;
    }
  }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  /// The lock's transaction ends (the lock with it) unless commit() ended it.
  ~HeldLock() {
    if (done_) return;
    const bool sent = store_.send_release(c_);
    store_.give_back(std::move(c_), sent, true);
  }
  /// The connection holding the lock, in its transaction: statements there commit with commit().
  PgConnection& connection() { return c_; }
  void commit() {
    done_ = true;
    try {
      c_.exec("COMMIT");
    } catch (...) {
      store_.give_back(std::move(c_), false);
      throw;
    }
    store_.give_back(std::move(c_), true);
  }

private:
  PgStore& store_;
  PgConnection c_;
  bool done_ = false;
};

void PgStore::give_back(PgConnection c, bool reusable, bool owes_result) noexcept {
  pool_->give_back(std::move(c), reusable, false, owes_result);
}

PgError PgStore::named(const PgError& e) const {
  std::string what = e.what();
  static constexpr std::string_view kPrefix = "PostgreSQL store ";
  if (what.starts_with(kPrefix)) return e;
  std::string message = what.starts_with(name_ + ": ") ? what.substr(name_.size() + 2) : what;
  if (connection_gone(e) && message.find("connection lost") == std::string::npos)
    message = "connection lost: " + message;
  return PgError(std::string(kPrefix) + name_ + ": " + message, e.sqlstate());
}

// ---- construction ----

PgStore::PgStore(PgStoreOptions options) : options_(std::move(options)), name_(redact_url(options_.url)) {
  ConnectOptions co;
  co.statement_timeout = options_.statement_timeout;
  co.lock_timeout = options_.lock_timeout;
  try {
    PgConnection first = PgConnection::connect(options_.url, co);
    check_schema(first);
    role_ = first.user();
    pool_ = std::make_unique<Pool>(options_.url, co, options_.pool_size, name_, std::move(first));
  } catch (const PgError& e) {
    throw named(e);
  }
  if (options_.listen) feed_ = std::make_unique<ChangeFeed>(options_.url, co);
  ConnectOptions indexing = co;
  indexing.application_name = "dsh-acp indexer";  // as the listener: a connection of its own, told apart
  indexer_ = std::make_unique<SearchIndexer>(*this, options_.url, indexing);
}

PgStore::~PgStore() { indexer_.reset(); }

bool PgStore::index_pending(const std::string& id) { return indexer_->pending(id); }

void PgStore::index_later(const std::string& id, std::int64_t first, std::int64_t next, std::vector<SearchRow> rows) {
  indexer_->submit(id, first, next, std::move(rows));
}

bool PgStore::wait_indexed(std::chrono::milliseconds timeout) { return indexer_->wait_settled(timeout); }

bool PgStore::wait_listening(std::chrono::milliseconds timeout) { return feed_ && feed_->wait_listening(timeout); }

// ---- readers ----

std::optional<PgStore::Visible> PgStore::visible(PgConnection& c, const std::string& id) {
  PgResult r = c.exec("SELECT owner, owner = current_user FROM dsh_acp.sessions WHERE id = $1" + std::string(kPickSession),
                      {id});
  if (r.rows() == 0) return std::nullopt;
  return Visible{std::string(r.value(0, 0)), r.value(0, 1) == "t"};
}

std::optional<std::string> PgStore::find_log(const std::string& id) {
  try {
    Lease c = lease();
    if (!visible(*c, id)) return std::nullopt;
    return locator(id);
  } catch (const PgError& e) {
    throw named(e);
  }
}

StreamResult PgStore::read_events(const std::string& id, const EventSink& sink, std::stop_token stop,
                                  EventLifetime lifetime) {
  try {
    Lease c = lease();
    // One snapshot: the header and exactly the events committed with it.
    Transaction tx(*c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    PgResult row =
        c->exec("SELECT header_line, event_count, owner FROM dsh_acp.sessions WHERE id = $1" + std::string(kPickSession), {id});
    if (row.rows() == 0) throw SessionNotFound(id);
    const std::string where = locator(id);
    const std::int64_t count = row.int64(0, 1);
    ScanResult out;
    LineWalker walker(where, sink, out, lifetime);
    walker.line(stored_line(row.value(0, 0), 1));
    check_identity(out.header, id, where);
    std::int64_t number = 1;
    for_each_line(*c, row.value(0, 2), id, 0, [&](std::string_view line, std::int64_t) {
      if (stop.stop_requested()) throw ReadCancelled();
      walker.line(stored_line(line, ++number));
    });
    if (out.state.count() != count)
      throw StoreCorrupt(where, number, "the session row counts " + std::to_string(count) + " events, its lines hold " +
                                            std::to_string(out.state.count()));
    tx.commit();
    StreamResult r;
    r.path = where;
    r.header = std::move(out.header);
    if (count > 0) r.capturedThroughSeq = count - 1;
    return r;
  } catch (const PgError& e) {
    throw named(e);
  }
}

std::vector<SessionListing> PgStore::list_sessions(const ListQuery& q) {
  std::string sql =
      "SELECT id, version, created_at, cwd, parent_session, seed_length, delegation_depth, origin, agent_preset, "
      "title, updated_at, size_bytes, owner, shared FROM dsh_acp.sessions s "
      // One session per id: the one kPickSession picks (the role's own, else the first owner's).
      "WHERE NOT EXISTS (SELECT FROM dsh_acp.sessions o WHERE o.id = s.id AND o.owner <> s.owner AND "
      "(o.owner = current_user OR (s.owner <> current_user AND o.owner < s.owner)))";
  std::vector<std::string> values;
  values.reserve(4);
  auto param = [&](std::string v) {
    values.push_back(std::move(v));
    return "$" + std::to_string(values.size());
  };
  if (q.cwd) sql += " AND cwd_key = " + param(normalize_cwd(*q.cwd));
  else if (q.with_cwd_only) sql += " AND cwd IS NOT NULL";
  if (q.after) {
    const std::string at = param(std::to_string(q.after->first));
    const std::string after_id = param(q.after->second);
    sql += " AND (created_at < " + at + "::bigint OR (created_at = " + at + "::bigint AND id COLLATE \"en-US-x-icu\" > " +
           after_id + "::text))";
  }
  sql += " ORDER BY created_at DESC, id COLLATE \"en-US-x-icu\"";
  if (q.limit < std::size_t(std::numeric_limits<std::int64_t>::max()))
    sql += " LIMIT " + param(std::to_string(q.limit)) + "::bigint";
  std::vector<Param> params(values.begin(), values.end());
  // A page asked again while nothing changed (no notification, no write of ours) is the last answer.
  std::string key = sql;
  for (const auto& v : values) key.append(1, '\0').append(v);
  const std::uint64_t feed_at = feed_ ? feed_->current() : 0;  // 0: not listening, nothing cached is good
  const std::uint64_t local_at = local_changes_.load(std::memory_order_acquire);
  if (feed_at) {
    std::lock_guard g(listings_mu_);
    auto it = listings_.find(key);
    if (it != listings_.end() && it->second.feed == feed_at && it->second.local == local_at) return it->second.rows;
  }
  try {
    Lease c = lease();
    PgResult r = c->exec(sql, params);
    std::vector<SessionListing> out;
    out.reserve(std::size_t(r.rows()));
    for (int i = 0; i < r.rows(); ++i) {
      SessionListing s;
      SessionHeader& h = s.header;
      h.id = std::string(r.value(i, 0));
      // Nullable columns (a row written by another tool): the header's defaults.
      h.version = r.is_null(i, 1) ? kSessionFormatVersion : r.int64(i, 1);
      h.createdAt = r.int64(i, 2);
      h.cwd = opt(r, i, 3);
      h.parentSession = opt(r, i, 4);
      if (!r.is_null(i, 5)) h.seedLength = r.int64(i, 5);
      h.delegationDepth = r.is_null(i, 6) ? 0 : r.int64(i, 6);
      h.origin = opt(r, i, 7);
      h.agentPreset = opt(r, i, 8);
      s.title = opt(r, i, 9);
      s.updatedAt = r.int64(i, 10);
      s.sizeBytes = std::uint64_t(r.int64(i, 11));
      s.owner = std::string(r.value(i, 12));
      s.shared = r.value(i, 13) == "t";
      out.push_back(std::move(s));
    }
    // Kept only when no change was heard while the query ran (it may predate that change).
    if (feed_at && feed_->current() == feed_at && local_changes_.load(std::memory_order_acquire) == local_at) {
      std::lock_guard g(listings_mu_);
      if (listings_.size() >= kCachedListings) listings_.clear();
      listings_[std::move(key)] = CachedListing{feed_at, local_at, out};
    }
    return out;
  } catch (const PgError& e) {
    throw named(e);
  }
}

// ---- locks ----

namespace {

// Ends the transaction a lock was tried or waited for in (busy, or an error on the way).
void end_transaction(PgConnection& c) noexcept {
  try {
    c.exec("ROLLBACK");
  } catch (...) {
    // The connection is gone: the server ended the transaction with it.
  }
}

} // namespace

void PgStore::lock_session(PgConnection& c, const std::string& id, const LockWait& wait) {
  c.exec(kMakeLockRow, {id});
  // A free lock is taken in one round trip; only a held one costs the timed wait.
  PgResult tried = c.exec_last(try_lock(c, id));
  if (tried.rows() == 1) return;
  wait_for_lock(c, id, wait);
}

void PgStore::wait_for_lock(PgConnection& c, const std::string& id, const LockWait& wait) {
  using clock = std::chrono::steady_clock;
  const auto deadline = wait.since.value_or(clock::now()) + options_.lock_timeout;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
  // As with the file lock, a stop ends only a wait: a lock no one holds was taken even after it (a
  // prompt cancelled as it arrives still logs its message and closes its turn). lock_timeout 0 would
  // mean "forever": a wait with no time left only tried.
  if (!wait.wait || left < 1ms || wait.stop.stop_requested()) {
    end_transaction(c);
    throw SessionBusy(id);
  }
  bool found = false;
  try {
    std::stop_callback cancel(wait.stop, [&c] { c.cancel(); });
    // In the transaction try_lock() opened; SET LOCAL ends with it.
    c.exec("SELECT set_config('lock_timeout', $1, true)", {std::to_string(left.count()) + "ms"});
    found = c.exec(kWaitLock, {id}).rows() == 1;
    if (found) c.exec("SET LOCAL lock_timeout TO DEFAULT");
  } catch (const PgError& e) {
    end_transaction(c);
    // 55P03: lock_timeout; 57014: cancelled (the stop token) or statement_timeout.
    if (e.sqlstate() == "55P03" || e.sqlstate() == "57014") throw SessionBusy(id);
    throw;
  }
  // The row went while we waited: its session was deleted (a writer still may make it again).
  if (!found) {
    end_transaction(c);
    throw SessionBusy(id);
  }
  // A stop that came as the lock was granted: its cancel found nothing to cancel.
  if (wait.stop.stop_requested()) {
    end_transaction(c);
    throw SessionBusy(id);
  }
}

void PgStore::claim_session(PgConnection& c, const std::string& id, const LockWait& wait) {
  // Visibility, ownership and a free lock in one round trip; the lock is tried only on a session of
  // this role's (someone else's shared session is never locked by a reader).
  PgResult r = c.exec_last(claim(c, id));
  if (r.rows() == 0 || r.value(0, 1) != "t") {
    end_transaction(c);
    if (r.rows() == 0) throw SessionNotFound(id);
    throw SessionReadOnly(id, "it belongs to " + std::string(r.value(0, 0)));
  }
  if (r.value(0, 2) == "t") return;
  if (r.value(0, 3) == "t") return wait_for_lock(c, id, wait);  // tried already
  // No lock row yet (a session written by an older version, or made by hand): made, then taken.
  end_transaction(c);
  lock_session(c, id, wait);
}

bool PgStore::send_release(PgConnection& c) noexcept {
  try {
    c.send("ROLLBACK");
    return true;
  } catch (...) {
    return false;
  }
}

bool PgStore::send_announcement(PgConnection& c) noexcept {
  try {
    c.send(kAnnounce);
    return true;
  } catch (...) {
    return false;
  }
}

// ---- writers ----

PgStore::Loaded PgStore::load(PgConnection& c, const std::string& id) {
  const std::string where = locator(id);
  PgResult row = c.exec(kLoadRow, {id});
  if (row.rows() == 0) throw SessionNotFound(id);
  const std::string header_line(row.value(0, 0));
  const Generation shape = shape_of(row, 0, 1, where);
  const std::int64_t count = row.int64(0, 2);
  const std::string owner(row.value(0, 3));
  ScanResult out;
  std::int64_t from = 0;
  {
    std::lock_guard g(mu_);
    auto it = known_.find(id);
    // The cache is good up to its count when the row still has its header (not a session deleted
    // and created again) and at least that many events. A turn left open is folded again: the
    // closers must be computed from the stored events, whoever left it open.
    if (it != known_.end() && it->second.header_line == header_line && it->second.shape == shape &&
        it->second.log.state.count() <= count && !it->second.log.state.turn_open()) {
      if (it->second.log.state.count() == count) return it->second;
      out.header = it->second.log.header;
      out.state = it->second.log.state;
      from = out.state.count();
    }
  }
  const EventSink none;
  LineWalker walker(where, none, out, EventLifetime::transient);
  if (from == 0) {
    walker.line(stored_line(header_line, 1));
    check_identity(out.header, id, where);
  }
  {
    Transaction tx(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    std::int64_t number = from + 1;
    for_each_line(c, owner, id, from, [&](std::string_view line, std::int64_t) { walker.line(stored_line(line, ++number)); });
    tx.commit();
  }
  if (out.state.count() != count)
    throw StoreCorrupt(where, count + 1, "the session row counts " + std::to_string(count) + " events, its lines hold " +
                                            std::to_string(out.state.count()));
  Loaded l;
  l.log = published_log(id, where, std::move(out.header), std::move(out.state));
  l.shape = shape;
  l.header_line = header_line;
  return l;
}

void PgStore::remember(const KnownLog& log, Generation shape, const std::string& header_line) {
  changed_here();
  std::lock_guard g(mu_);
  Loaded& l = known_[log.id];
  l.log = log;
  l.shape = shape;
  l.header_line = header_line;
}

void PgStore::forget(const std::string& id) {
  changed_here();
  std::lock_guard g(mu_);
  known_.erase(id);
}

SessionWriter PgStore::create(const SessionHeader& header, const LockWait& wait) {
  if (header.id.empty()) throw InvalidSessionId("session id must not be empty");
  if (header.cwd && !support::is_absolute_path(*header.cwd))
    throw StoreError("session cwd must be an absolute path: " + *header.cwd);
  // As a 0.1 root refuses it: the session could not be copied into one.
  if (options_.generation == Generation::project_dirs && header.cwd && header.cwd->empty())
    throw StoreError("session cwd must not be empty in a harness 0.1 store");
  try {
    auto appender =
        std::make_unique<PgAppender>(*this, pool_->take(false), pool_->take(false), header.id, options_.generation);
    appender->lock(wait);
    if (visible(appender->connection(), header.id)) throw SessionExists(header.id);
    KnownLog log;
    log.id = header.id;
    log.path = locator(header.id);
    log.header = header;
    log.header.version = kSessionFormatVersion;
    return SessionWriter(options_.generation, std::move(log), std::move(appender));
  } catch (const PgError& e) {
    throw named(e);
  }
}

SessionWriter PgStore::open(const std::string& id, const LockWait& wait) {
  try {
    auto appender = std::make_unique<PgAppender>(*this, pool_->take(false), pool_->take(false), id, options_.generation);
    appender->claim(wait);
    Loaded l = load(appender->connection(), id);
    appender->set_shape(l.shape);
    appender->set_header_line(l.header_line);
    if (l.log.state.turn_open()) {
      // A turn left open by a writer that died: closed as file repair closes it, in one batch.
      const std::vector<json::object> closers = l.log.state.closers();
      appender->write(l.log, closer_lines(closers, l.shape), closers, true);
      for (const auto& c : closers) l.log.state.observe(c);
    }
    remember(l.log, l.shape, l.header_line);
    return SessionWriter(l.shape, std::move(l.log), std::move(appender));
  } catch (const PgError& e) {
    throw named(e);
  }
}

SessionWriter PgStore::open_or_create(const SessionHeader& header, const LockWait& wait) {
  try {
    return open(header.id, wait);
  } catch (const SessionNotFound&) {
    return create(header, wait);
  }
}

void PgStore::delete_session(const std::string& id, const LockWait& wait) {
  try {
    {
      Lease c = lease();
      auto v = visible(*c, id);
      if (!v) throw SessionNotFound(id);
      if (!v->mine) throw SessionReadOnly(id, "it belongs to " + v->owner);
    }
    // The row, its events (the schema's trigger) and the lock's row go in the lock's transaction.
    HeldLock held(*this, id, wait);
    PgResult r = held.connection().exec("DELETE FROM dsh_acp.sessions WHERE owner = current_user AND id = $1", {id});
    held.connection().exec("DELETE FROM dsh_acp.session_locks WHERE owner = current_user AND id = $1", {id});
    held.commit();
    indexer_->drop(id);
    forget(id);
    if (r.affected() == 0) throw SessionNotFound(id);
  } catch (const PgError& e) {
    throw named(e);
  }
}

// ---- copying ----

Generation PgStore::export_lines(const std::string& id, const std::function<void(std::string_view)>& header,
                                 const std::function<void(std::string_view)>& line, std::int64_t from_seq) {
  try {
    Lease c = lease();
    Transaction tx(*c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    PgResult row =
        c->exec("SELECT header_line, generation, owner FROM dsh_acp.sessions WHERE id = $1" + std::string(kPickSession), {id});
    if (row.rows() == 0) throw SessionNotFound(id);
    const Generation shape = shape_of(row, 0, 1, locator(id));
    if (header) header(row.value(0, 0));
    // A packed chunk row (imported from a 45fc log) is stored at its first member's seq: a
    // `from_seq` inside one starts at the next line.
    for_each_line(*c, row.value(0, 2), id, from_seq, [&](std::string_view text, std::int64_t) {
      if (line) line(text);
    });
    tx.commit();
    return shape;
  } catch (const PgError& e) {
    throw named(e);
  }
}

void PgStore::import_lines(const std::string& id, Generation g, const std::string& header_line, std::int64_t first_seq,
                           const std::vector<std::string>& lines) {
  if (id.empty()) throw InvalidSessionId("session id must not be empty");
  std::optional<SessionHeader> header = check_import_header(id, g, header_line, first_seq);
  const std::string where = locator(id);
  try {
    Lease c = lease();
    if (header) {
      if (visible(*c, id)) throw SessionExists(id);
    } else {
      auto v = visible(*c, id);
      if (!v) throw SessionNotFound(id);
      if (!v->mine) throw SessionReadOnly(id, "it belongs to " + v->owner);
    }
    HeldLock held(*this, id, {});
    Loaded existing;
    if (!header) {
      existing = load(*c, id);
      if (existing.shape != g)
        throw StoreError("import into " + where + ": the session holds harness " +
                         std::string(acp::store::generation_name(existing.shape)) + " lines, not " +
                         std::string(acp::store::generation_name(g)));
    }

    // One row per line, described by its first event; the batch's title and time by its last ones.
    std::vector<LineRow> rows;
    rows.reserve(lines.size());
    BatchEffect effect;
    effect.first_seq = first_seq;
    for (const auto& l : lines) {
      rows.push_back(LineRow{0, {}, 0, l});
      effect.bytes += l.size() + 1;
    }
    std::vector<SearchRow> search;
    std::size_t described = 0;  // rows before this one have their first event
    auto sink = [&](std::size_t line, json::object&& e) {
      add_search_rows(search, e);
      if (string_member(e, 0, "type") == "session/title")
        if (const json::object* d = object_member(e, 3, "data")) effect.title = std::string(string_at(*d, "title"));
      auto time = member_at(e, 2, "time");
      effect.updated_at = time ? safe_int(*time) : std::nullopt;
      if (line < described) return;
      described = line + 1;
      LineRow& row = rows[line];
      auto seq = member_at(e, 1, "seq");
      row.seq = seq ? safe_int(*seq).value_or(0) : 0;
      row.type = std::string(string_member(e, 0, "type"));
      row.time = effect.updated_at.value_or(0);
    };
    KnownLog log;
    log.id = id;
    log.path = where;
    log.header = header ? *header : existing.log.header;
    log.state = check_import_lines(id, log.header, header ? LogState() : existing.log.state, first_seq, lines, sink,
                                   EventLifetime::transient);
    effect.next_seq = log.state.count();

    Transaction tx(*c);
    if (header) insert_session_row(*c, *header, g, header_line);
    insert_lines(*c, where, id, rows, effect, true, Commit::durable, search);
    tx.commit();
    log.on_disk = true;
    remember(log, g, header ? header_line : existing.header_line);
  } catch (const PgError& e) {
    forget(id);
    throw named(e);
  }
}

void PgStore::set_shared(const std::string& id, bool shared) {
  try {
    Lease c = lease();
    PgResult r = c->exec("UPDATE dsh_acp.sessions SET shared = $2::boolean WHERE owner = current_user AND id = $1",
                         {id, shared ? "true" : "false"});
    changed_here();
    if (r.affected() > 0) return;
    auto v = visible(*c, id);
    if (!v) throw SessionNotFound(id);
    throw SessionReadOnly(id, "it belongs to " + v->owner);
  } catch (const PgError& e) {
    throw named(e);
  }
}

} // namespace acp::store::pg

// ---- recall by content (docs/recall.md) ----

namespace acp::store::pg {

namespace {

// A term as a tsquery operand: quoted, so the server takes it verbatim as one lexeme (never as
// operators, whatever it holds); a quote or backslash inside is doubled, as tsquery input wants.
std::string tsquery_operand(std::string_view term) {
  std::string q = "'";
  for (char ch : term) {
    if (ch == '\'' || ch == '\\') q += ch;
    q += ch;
  }
  return q + "'";
}

// A text[] in array input syntax, every element quoted.
std::string text_array(const std::vector<std::string>& values) {
  std::string out = "{";
  for (const std::string& v : values) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char ch : v) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  return out + "}";
}

// A term held by at least this many texts the role can read counts as common: it weighs the least,
// and its texts are not each looked at (a question of common words alone looks at kWindowTexts).
constexpr std::int64_t kCommonTexts = 100;
// Texts holding every term (or, when none does, any common term) looked at, at most.
constexpr std::int64_t kSearchRows = 1000;
// Finding a common word through the GIN index costs its whole posting list (a bitmap of every text
// holding it: ~20 ms for a word in 100,000 texts), however few texts are wanted; reading a text's
// tsvector back costs a few microseconds. So a search first samples kSampleTexts of the role's own
// texts: a term held by kSampleCommon of them or more is looked for among the first kProbeTexts own
// texts, and when kCommonTexts of them hold it, it is common without a look at the index. Either
// way the count is the same (texts the role can read, up to kCommonTexts): only its cost differs.
constexpr std::int64_t kSampleTexts = 200;
constexpr std::int64_t kSampleCommon = 30;
constexpr std::int64_t kProbeTexts = 2000;
// A question of common words only ranks the first this many own texts (own_texts) by how many of them
// each holds.
constexpr std::int64_t kWindowTexts = 1000;

// The role's own texts in the order of their key, at most `n`: the same texts every time, through the
// primary key, of sessions in the order of their ids (random ones: any of the role's sessions), not
// wherever a sequential scan happens to start. `detoasted`: each tsvector read once (several terms
// are matched against it).
std::string own_texts(std::int64_t n, bool detoasted, std::string_view columns = "") {
  return "(SELECT " + std::string(columns) + (detoasted ? "tsv || ''::tsvector AS tsv" : "tsv") +
         " FROM dsh_acp.search WHERE owner = current_user ORDER BY owner, session_id, seq, part LIMIT " +
         std::to_string(n) + ")";
}

// Per term ($1..$n): how many texts the role can read hold it (to kCommonTexts); then how many
// sampled texts hold them all ($(n+1)). Each
// CASE runs its subqueries (InitPlans, evaluated when first needed) only when the cheaper answer
// before it did not settle the count: sample, then the probe of own texts, then the GIN index.
std::string term_counts_sql(std::size_t n) {
  auto p = [](std::size_t i) { return "$" + std::to_string(i) + "::tsquery"; };
  const std::string common = std::to_string(kCommonTexts);
  std::string sample, own, out;
  for (std::size_t i = 1; i <= n + 1; ++i)
    sample += std::string(i > 1 ? ", " : "") + "count(*) FILTER (WHERE tsv @@ " + p(i) + ") AS c" + std::to_string(i);
  for (std::size_t i = 1; i <= n; ++i) {
    const std::string k = std::to_string(i);
    own += std::string(i > 1 ? ", " : "") + "CASE WHEN p.c" + k + " >= " + common + " THEN " + common + " WHEN p.c" + k +
           " >= " + std::to_string(kSampleCommon) + " THEN (SELECT count(*) FROM (SELECT FROM " +
           own_texts(kProbeTexts, false) + " w WHERE tsv @@ " + p(i) + " LIMIT " + common + ") x) ELSE 0 END AS o" + k;
    out += std::string(i > 1 ? ", " : "") + "CASE WHEN o.o" + k + " >= " + common + " THEN " + common +
           " ELSE (SELECT count(*) FROM dsh_acp.search_texts(" + p(i) + ", '{}', " + common + ")) END";
  }
  return "WITH s AS MATERIALIZED " + own_texts(kSampleTexts, true) + ", p AS MATERIALIZED (SELECT " + sample +
         " FROM s), o AS MATERIALIZED (SELECT " + own + " FROM p) SELECT " + out + ", p.c" + std::to_string(n + 1) +
         " FROM o, p";
}

// Parameters of a statement being built: add() gives the placeholder of a value.
struct Params {
  std::vector<std::string> values;
  std::string add(std::string v) {
    values.push_back(std::move(v));
    return "$" + std::to_string(values.size());
  }
};

// One part of a search: the texts holding `query` (a tsquery), each adding `weight` to its score;
// or (`window`) the first kWindowTexts own texts holding any of `terms`, each adding the weights of
// those it holds.
struct Branch {
  std::string query;
  double weight = 0;
  std::int64_t limit = 0;
  std::vector<std::pair<std::string, double>> terms;  ///< window only
};

std::string float_text(double v);

// The ranking over `branches`. The texts come from the GIN index (through dsh_acp.search_texts,
// schema.hpp: the role's own and shared sessions only) or from the role's own texts in the table's
// order; no text's words are read back but those. A text scores the sum of the weights of the
// branches that found it; a session is its best text plus a thousandth of the sum of its texts (more
// texts on the subject: ahead at a tie), and is the one session its id names for this role
// (kPickSession: its own, else the first owner's shared one), as listings show it: a text of the
// role's own needs no look at other sessions.
std::string search_sql(const std::vector<Branch>& branches, Params& params, const std::string& exclude_list,
                       std::size_t limit) {
  const std::string exclude = params.add(exclude_list) + "::text[]";
  std::string hits;
  for (const Branch& b : branches) {
    hits += hits.empty() ? "" : " UNION ALL ";
    if (b.terms.empty()) {
      hits += "SELECT owner, session_id, seq, part, " + params.add(float_text(b.weight)) +
              "::float8 AS w FROM dsh_acp.search_texts(" + params.add(b.query) + "::tsquery, " + exclude + ", " +
              std::to_string(b.limit) + ")";
      continue;
    }
    std::string score;
    for (const auto& [term, weight] : b.terms)
      score += std::string(score.empty() ? "" : " + ") + "CASE WHEN tsv @@ " + params.add(term) + "::tsquery THEN " +
               params.add(float_text(weight)) + "::float8 ELSE 0 END";
    hits += "SELECT owner, session_id, seq, part, " + score + " AS w FROM " +
            own_texts(kWindowTexts, true, "owner, session_id, seq, part, ") + " o WHERE tsv @@ " + params.add(b.query) +
            "::tsquery AND NOT (session_id = ANY (" + exclude + "))";
  }
  return "WITH hits AS (" + hits + "), "
         "r AS (SELECT owner, session_id, seq, part, sum(w) AS score FROM hits GROUP BY owner, session_id, seq, part), "
         "b AS (SELECT DISTINCT ON (owner, session_id) owner, session_id, seq, part, score, "
         "sum(score) OVER (PARTITION BY owner, session_id) AS total FROM r ORDER BY owner, session_id, score DESC, seq, part), "
         "top AS (SELECT owner, session_id, seq, part, score + total / 1000 AS score FROM b "
         "WHERE b.owner = current_user OR NOT EXISTS (SELECT FROM dsh_acp.sessions o WHERE o.id = b.session_id AND "
         "o.owner <> b.owner AND (o.owner = current_user OR (b.owner <> current_user AND o.owner < b.owner))) "
         "ORDER BY score DESC, session_id LIMIT " + params.add(std::to_string(limit)) + "::bigint) "
         "SELECT top.session_id, top.seq, x.kind, x.text, top.score FROM top "
         "JOIN dsh_acp.search x USING (owner, session_id, seq, part) ORDER BY top.score DESC, top.session_id";
}

std::string float_text(double v) {
  char out[32];
  const auto [end, ec] = std::to_chars(out, out + sizeof out, v);
  return std::string(out, ec == std::errc() ? end : out);
}

TextKind kind_named(std::string_view name) {
  for (TextKind k : {TextKind::user, TextKind::agent, TextKind::tool_title, TextKind::tool_result, TextKind::summary})
    if (text_kind_name(k) == name) return k;
  return TextKind::user;
}

// Rows a backfill inserts per statement.
constexpr std::size_t kIndexRowsPerStatement = 500;

// Backfilled rows: ON CONFLICT DO NOTHING, since a writer may have stored some already (texts
// written after a gap, or by a backfill that ran beside this one).
constexpr std::string_view kInsertSearchRows =
    "INSERT INTO dsh_acp.search (session_id, seq, part, kind, text, tsv) "
    "SELECT $1, x.seq, x.part, x.kind, x.text, array_to_tsvector(string_to_array(x.words, ' ')) "
    "FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[]) AS x(seq, part, kind, text, words) "
    "ON CONFLICT DO NOTHING";

std::string int_array(const std::vector<SearchRow>& rows, std::size_t begin, std::size_t end, bool seqs) {
  std::string out = "{";
  for (std::size_t i = begin; i < end; ++i) {
    if (i > begin) out += ',';
    out += std::to_string(seqs ? rows[i].seq : rows[i].part);
  }
  return out + "}";
}

// What a query's terms weigh. Each term weighs ln(1 + kCommonTexts / texts holding it): rarer terms
// count more, and only texts this role can read are counted, so nothing anyone else keeps moves a
// score. A rarer term's texts are each looked at (a branch each); common terms add their weight to
// texts holding every term (a text holding a rarer term and only some common ones goes without
// theirs: at most ln 2 each).
struct TermWeights {
  std::vector<Branch> branches;      ///< one per rarer term
  double common = 0;                 ///< the common terms' weights together
  std::vector<std::size_t> commons;  ///< the common terms' positions
};

TermWeights weigh_terms(const PgResult& counts, const std::vector<std::string>& operands) {
  TermWeights out;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const std::int64_t held = counts.int64(0, int(i));
    if (held == 0) continue;
    const double w = std::log1p(double(kCommonTexts) / double(held));
    if (held < kCommonTexts) {
      out.branches.push_back({operands[i], w, kCommonTexts, {}});
    } else {
      out.common += w;
      out.commons.push_back(i);
    }
  }
  return out;
}

// The ranked texts of a search for `operands` (term_counts_sql, then search_sql's columns); none
// when no text holds any term.
std::optional<PgResult> rank_texts(PgConnection& c, const std::vector<std::string>& operands,
                                   const ContentQuery& query) {
  const std::size_t n = operands.size();
  std::string all;
  for (const std::string& o : operands) all += (all.empty() ? "" : " & ") + o;
  std::vector<Param> count_params(operands.begin(), operands.end());
  count_params.emplace_back(all);
  PgResult counts = c.exec(term_counts_sql(n), count_params);
  TermWeights weights = weigh_terms(counts, operands);
  std::vector<Branch>& branches = weights.branches;
  std::vector<std::size_t>& commons = weights.commons;
  const double common_weight = std::log1p(1.0);
  auto rank = [&](const std::vector<Branch>& parts) {
    Params params;
    const std::string sql = search_sql(parts, params, text_array(query.exclude), query.limit);
    return c.exec(sql, std::vector<Param>(params.values.begin(), params.values.end()));
  };
  std::optional<PgResult> ranked;
  if (branches.empty() && !commons.empty()) {
    // Common words only: the role's first kWindowTexts own texts holding any, by how many they
    // hold (the index would read every text holding each word to find them). The index only
    // when none of those holds one (the words are common in texts shared with the role).
    Branch window;
    std::string any;
    for (std::size_t i : commons) {
      any += (any.empty() ? "" : " | ") + operands[i];
      window.terms.emplace_back(operands[i], common_weight);
    }
    window.query = any;
    ranked = rank({window});
    if (ranked->rows() > 0) commons.clear();
  }
  if (!commons.empty()) {
    // With a rarer term, the index finds the texts holding every term from that term's few (and
    // none when no text holds them all); without one, it is asked first whether any does.
    bool together = counts.int64(0, int(n)) > 0 || !branches.empty();
    if (!together) {
      PgResult any = c.exec("SELECT count(*) FROM dsh_acp.search_texts($1::tsquery, '{}', 1)", {all});
      together = any.int64(0, 0) > 0;
    }
    if (together && (n > 1 || branches.empty())) branches.push_back({all, weights.common, kSearchRows, {}});
    else if (branches.empty())  // common words alone, never all in one text
      for (std::size_t i : commons)
        branches.push_back({operands[i], common_weight, kSearchRows / std::int64_t(commons.size()), {}});
  }
  if (!branches.empty()) ranked = rank(branches);
  return ranked;
}

std::vector<ContentHit> hits_of(const PgResult& r, const std::vector<std::string>& terms) {
  std::vector<ContentHit> hits;
  for (int i = 0; i < r.rows(); ++i) {
    ContentHit h;
    h.session_id = std::string(r.value(i, 0));
    h.seq = r.int64(i, 1);
    h.kind = kind_named(r.value(i, 2));
    h.snippet = make_snippet(r.value(i, 3), terms);
    h.score = std::strtod(std::string(r.value(i, 4)).c_str(), nullptr);
    hits.push_back(std::move(h));
  }
  return hits;
}

} // namespace

std::vector<std::string> PgStore::stale_sessions(PgConnection& c, std::size_t limit) {
  PgResult r = c.exec("SELECT id FROM dsh_acp.sessions WHERE owner = current_user AND indexed_count < event_count"
                      " ORDER BY created_at DESC, id LIMIT $1::bigint",
                      {std::to_string(limit)});
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.value(i, 0));
  return out;
}

bool PgStore::index_session(PgConnection& c, const std::string& id, std::stop_token stop) {
  const std::string where = locator(id);
  // Read committed: each statement sees what writers committed before it. The row's key-share lock
  // keeps the session from being deleted (and its id made again) while its lines are read, and lets
  // its writer go on appending: lines below the count read here are committed and never change.
  Transaction tx(c);
  c.exec(kQuietCommit);  // a session indexed is no change a listing shows
  PgResult row = c.exec("SELECT header_line, event_count, indexed_count FROM dsh_acp.sessions"
                        " WHERE owner = current_user AND id = $1 FOR KEY SHARE",
                        {id});
  if (row.rows() == 0) return false;
  const std::int64_t count = row.int64(0, 1), from = row.int64(0, 2);
  if (from >= count) return false;
  std::vector<SearchRow> texts;
  const EventSink sink = [&](json::object&& e) {
    const json::value* seq = member_at(e, 1, "seq");
    const std::int64_t s = seq ? safe_int(*seq).value_or(-1) : -1;
    if (s >= from && s < count) add_search_rows(texts, e);
  };
  ScanResult out;
  // Read from the header on: a packed line (45fc) is read in the state the lines before it leave.
  LineWalker walker(where, sink, out, EventLifetime::transient);
  walker.line(stored_line(row.value(0, 0), 1));
  check_identity(out.header, id, where);
  std::int64_t number = 1;
  for_each_line(c, role_, id, 0, [&](std::string_view line, std::int64_t seq) {
    if (stop.stop_requested()) throw ReadCancelled();
    if (seq < count) walker.line(stored_line(line, ++number));
  });
  for (std::size_t begin = 0; begin < texts.size(); begin += kIndexRowsPerStatement) {
    const std::size_t end = std::min(texts.size(), begin + kIndexRowsPerStatement);
    std::vector<std::string> kinds, bodies, words;
    for (std::size_t i = begin; i < end; ++i) {
      kinds.emplace_back(text_kind_name(texts[i].kind));
      bodies.push_back(texts[i].text);
      words.push_back(texts[i].words);
    }
    const std::string seqs = int_array(texts, begin, end, true), parts = int_array(texts, begin, end, false),
                      kind_list = text_array(kinds), body_list = text_array(bodies), word_list = text_array(words);
    c.exec(kInsertSearchRows, {id, seqs, parts, kind_list, body_list, word_list});
  }
  c.exec("UPDATE dsh_acp.sessions SET indexed_count = $2::bigint WHERE owner = current_user AND id = $1"
         " AND indexed_count = $3::bigint",
         {id, std::to_string(count), std::to_string(from)});
  tx.commit();
  return true;
}

IndexProgress PgStore::index_content(const IndexProgressFn& progress, std::stop_token stop) {
  IndexProgress p;
  try {
    Lease c = lease();
    p.total = std::size_t(c->exec("SELECT count(DISTINCT id) FROM dsh_acp.sessions").int64(0, 0));
    const std::vector<std::string> stale = stale_sessions(*c, std::numeric_limits<std::int64_t>::max());
    p.done = p.total > stale.size() ? p.total - stale.size() : 0;
    if (progress) progress(p);
    for (const std::string& id : stale) {
      if (stop.stop_requested()) break;
      try {
        if (index_session(*c, id, stop)) ++p.indexed;
      } catch (const ReadCancelled&) {
        break;
      } catch (const PgError&) {
        throw;
      } catch (const StoreError&) {
        // A session whose lines cannot be read (StoreCorrupt) stays unsearchable, and is tried again
        // next time; the others are indexed.
      }
      p.done = std::min(p.total, p.done + 1);
      if (progress) progress(p);
    }
  } catch (const PgError& e) {
    throw named(e);
  }
  return p;
}

std::vector<ContentHit> PgStore::search_content(const ContentQuery& query, std::stop_token stop) {
  std::vector<ContentHit> hits;
  const std::vector<std::string> terms = content_terms(query.words);
  if (terms.empty() || query.limit == 0) return hits;
  std::vector<std::string> operands;
  for (const std::string& t : terms) operands.push_back(tsquery_operand(t));
  // What this process committed before the question is indexed first (normally a few milliseconds).
  indexer_->wait_settled(kFreshWait);
  try {
    Lease c = lease();
    // Lines whose texts were never indexed (their writer's process died before its indexer got to
    // them, or an older dsh-acp wrote them): a few are indexed now, newest first; more wait for
    // `dsh-acp store index`. Looked for at most every kCatchUpEvery (the
    // look reads every session row of the role's).
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::int64_t due = catch_up_due_.load(std::memory_order_relaxed);
    const bool look = now >= due && catch_up_due_.compare_exchange_strong(
                                        due, now + std::chrono::steady_clock::duration(kCatchUpEvery).count());
    for (const std::string& id : look ? stale_sessions(*c, kCatchUpSessions) : std::vector<std::string>{}) {
      try {
        index_session(*c, id, stop);
      } catch (const PgError&) {
        throw;
      } catch (const ReadCancelled&) {
        throw;
      } catch (const StoreError&) {
      }
    }
    std::stop_callback cancel(stop, [&c] { c->cancel(); });
    try {
      if (std::optional<PgResult> ranked = rank_texts(*c, operands, query)) hits = hits_of(*ranked, terms);
    } catch (const PgError& e) {
      if (stop.stop_requested() && e.sqlstate() == "57014") throw ReadCancelled();
      throw;
    }
  } catch (const PgError& e) {
    throw named(e);
  }
  if (stop.stop_requested()) throw ReadCancelled();
  return hits;
}

} // namespace acp::store::pg
