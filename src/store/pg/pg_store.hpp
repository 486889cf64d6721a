// The PostgreSQL backend of the store seam (issue 17): sessions of the dsh_acp schema (schema.hpp)
// served as the same normalised event model as a root of log files. Lines go in and come out as
// the text the file backend would write (no JSON re-encoding): a session's row keeps the shape its
// lines are in ('45fc' or '0.1'), and every line read goes through the file reader's own per-line
// rules (LineWalker). A write sequence holds the session's lock (a row lock row security guards, in
// a transaction kept open on a connection of its own); a batch is one transaction, on another, whose
// first seq is checked against the row.
//
// Every call blocks (database round trips, lock waits): call them on store threads, never on the
// connection thread. Thread-safe: connections come from a small pool, one thread per connection.
#pragma once

#include "store/backend.hpp"
#include "store/pg/connection.hpp"
#include "store/session_writer.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace acp::store::pg {

struct PgStoreOptions {
  std::string url;  ///< postgresql:// URL or conninfo (no password: the libpq ways only)
  std::chrono::milliseconds lock_timeout{2000};        ///< a session's write lock, and every row lock
  std::chrono::milliseconds statement_timeout{30000};  ///< every statement
  Generation generation = Generation::flat;             ///< the shape of new sessions
  std::size_t pool_size = 4;                            ///< connections readers share (writers own one each)
  /// Keep listings current through LISTEN (ChangeFeed) and serve a repeated one from memory while
  /// nothing changed; false: every listing is a query.
  bool listen = true;
};

class ChangeFeed;
class SearchIndexer;
struct SearchRow;

class PgStore final : public Backend {
public:
  /// Connects and checks the schema. Throws PgError (naming the redacted URL) when the server
  /// cannot be reached or refuses the role, SchemaError when the schema is missing, of another
  /// version or not usable by the role.
  explicit PgStore(PgStoreOptions options);
  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  /// The URL without its password.
  const std::string& name() const noexcept override { return name_; }
  Generation generation() const noexcept override { return options_.generation; }
  bool read_only() const noexcept override { return false; }
  /// The role this store's connections log in as (the owner of the sessions it creates).
  const std::string& role() const noexcept { return role_; }
  /// "<name()>#<id>": where a session is, in messages and StoreCorrupt.
  std::string locator(const std::string& id) const { return name_ + "#" + id; }

  /// locator(id) when the role can see the session (its own or a shared one), else nullopt: a
  /// session of someone else that is not shared is indistinguishable from one that does not exist.
  std::optional<std::string> find_log(const std::string& id) override;

  /// One snapshot of the session (header and events of one transaction), fetched in chunks of
  /// rows, each line read as the file reader reads a line of the session's shape.
  StreamResult read_events(const std::string& id, const EventSink& sink, std::stop_token stop = {},
                           EventLifetime lifetime = EventLifetime::kept) override;
  /// In SQL: newest first by createdAt, ties by id in en-US collation ("en-US-x-icu"), keyset cursor;
  /// rows carry owner and shared.
  std::vector<SessionListing> list_sessions(const ListQuery& query = {}) override;

  /// Takes the session's lock (wait bounded by lock_timeout from wait.since, or none with
  /// wait.wait == false; wait.stop ends it): SessionBusy. SessionExists when a session the role
  /// can see has the id (its own, or a shared one); another role's unshared session of that id is
  /// no conflict (ids are unique per owner).
  SessionWriter create(const SessionHeader& header, const LockWait& wait = {}) override;
  /// SessionNotFound (also for an invisible session), SessionReadOnly for someone else's shared
  /// session, SessionBusy; refreshes the cached state by the events written since, and closes a turn
  /// left open by a writer that died with the closers file repair writes.
  SessionWriter open(const std::string& id, const LockWait& wait = {}) override;
  /// open(), and create() when the role sees no such session: one round trip fewer than asking first.
  SessionWriter open_or_create(const SessionHeader& header, const LockWait& wait = {}) override;
  /// Under the session's lock; the events go with the row (the schema's delete trigger).
  void delete_session(const std::string& id, const LockWait& wait = {}) override;

  Generation export_lines(const std::string& id, const std::function<void(std::string_view)>& header,
                          const std::function<void(std::string_view)>& line, std::int64_t from_seq = 0) override;
  /// Under the session's lock, one transaction; lines of either shape (the row keeps one: a session
  /// holding the other shape refuses them). Lines are read as read_events would (StoreCorrupt).
  void import_lines(const std::string& id, Generation g, const std::string& header_line, std::int64_t first_seq,
                    const std::vector<std::string>& lines) override;
  void set_shared(const std::string& id, bool shared) override;

  /// PostgreSQL's full-text search over dsh_acp.search (docs/recall.md), under the role's row
  /// security: its own and shared sessions only, ranked by what it can read alone (each term
  /// weighs by how few texts this role can see hold it). Texts are written after their lines'
  /// commit by this store's indexer (pg_indexer.hpp), which a search first waits for (kFreshWait at
  /// most); a few of the role's own sessions whose texts lag (another process died before indexing
  /// them, or an older dsh-acp wrote them) are indexed first (kCatchUpSessions, looked for every
  /// kCatchUpEvery), the rest by index_content(). ReadCancelled when stopped.
  std::vector<ContentHit> search_content(const ContentQuery& query, std::stop_token stop = {}) override;
  /// Indexes the role's own sessions whose texts lag their lines (indexed_count < event_count), each
  /// in a transaction of its own, without taking the writer's lock: `total` counts the sessions the
  /// role sees, `indexed` those it indexed. Someone else's shared session that lacks texts stays
  /// unsearchable until its owner indexes it (row security: a role writes only its own rows).
  /// Idempotent; a stop ends it between or inside sessions (what was committed stays).
  IndexProgress index_content(const IndexProgressFn& progress = {}, std::stop_token stop = {}) override;
  /// How many stale sessions of its own a search indexes before answering, and how often it looks.
  static constexpr std::size_t kCatchUpSessions = 4;
  static constexpr std::chrono::seconds kCatchUpEvery{10};
  /// How long a search waits for this store's indexer to index the batches committed before it.
  static constexpr std::chrono::milliseconds kFreshWait{2000};
  /// Waits up to `timeout` until the indexer tried every batch this store committed before the call
  /// (tests, benchmarks); false on timeout.
  bool wait_indexed(std::chrono::milliseconds timeout);
  bool supports_sharing() const noexcept override { return true; }
  std::optional<std::string> person() const override { return role_; }

  class Pool;  ///< the connections (pg_store.cpp)

private:
  friend class PgAppender;
  friend class SearchIndexer;

  /// A pooled connection for the length of one call.
  class Lease;
  Lease lease();
  /// The session's lock on a leased connection for the length of one call.
  class HeldLock;
  /// The session's lock (its session_locks row, made when missing) in a transaction left open on `c`
  /// (idle, none open before), waiting as `wait` says: SessionBusy when not obtained (then no
  /// transaction is left open). The lock is the transaction's: it ends with it, or with the connection.
  void lock_session(PgConnection& c, const std::string& id, const LockWait& wait);
  /// The wait for a lock just found held by another transaction, in the transaction that tried it,
  /// as `wait` says: SessionBusy (the transaction ended).
  void wait_for_lock(PgConnection& c, const std::string& id, const LockWait& wait);
  /// An existing session's lock for a writer: SessionNotFound when the role cannot see it,
  /// SessionReadOnly when it is someone else's, else the lock as lock_session takes it.
  void claim_session(PgConnection& c, const std::string& id, const LockWait& wait);
  /// The visible row's owner and whether it is this role's; nullopt when the role cannot see it.
  struct Visible {
    std::string owner;
    bool mine = false;
  };
  std::optional<Visible> visible(PgConnection& c, const std::string& id);
  /// What a writer needs to know of an existing session.
  struct Loaded {
    KnownLog log;
    Generation shape = Generation::flat;
    std::string header_line;
  };
  /// The committed state of `id` under the caller's lock: the cache when the row did not change,
  /// else the cache folded over the events written since, else every event. SessionNotFound.
  Loaded load(PgConnection& c, const std::string& id);
  /// Ends the lock's transaction on `c` without waiting for the result (the pool reads it before
  /// the connection's next use, and closes a connection left in a transaction). False when it
  /// could not be sent.
  bool send_release(PgConnection& c) noexcept;
  /// Sends a NOTIFY for changes no durable commit announced, without waiting (as send_release).
  bool send_announcement(PgConnection& c) noexcept;
  /// A writer's own connection back to the pool (closed unless `reusable`); `owes_result`: after
  /// send_release() or send_announcement().
  void give_back(PgConnection c, bool reusable, bool owes_result = false) noexcept;
  void remember(const KnownLog& log, Generation shape, const std::string& header_line);
  void forget(const std::string& id);
  /// Indexes the texts of own session `id` from its indexed_count to its event_count (one
  /// transaction on `c`); false when there was nothing to do (gone, or caught up meanwhile).
  bool index_session(PgConnection& c, const std::string& id, std::stop_token stop);
  /// For writers: a batch of `id` waits for the indexer; `rows` (without words) of lines
  /// [first, next), just committed, to be indexed.
  bool index_pending(const std::string& id);
  void index_later(const std::string& id, std::int64_t first, std::int64_t next, std::vector<SearchRow> rows);
  /// The role's own sessions whose texts lag their lines, newest first, at most `limit`.
  std::vector<std::string> stale_sessions(PgConnection& c, std::size_t limit);
  /// `e` as thrown to callers: naming the store, "connection lost" said as such.
  PgError named(const PgError& e) const;

  PgStoreOptions options_;
  std::string name_;
  std::string role_;
  std::unique_ptr<Pool> pool_;

  std::mutex mu_;
  std::unordered_map<std::string, Loaded> known_;  ///< guarded by mu_

  /// A listing page as a query gave it, good while neither the feed nor this store saw a change.
  struct CachedListing {
    std::uint64_t feed = 0, local = 0;
    std::vector<SessionListing> rows;
  };
  void changed_here() noexcept { local_changes_.fetch_add(1, std::memory_order_acq_rel); }
  std::unique_ptr<ChangeFeed> feed_;
  std::atomic<std::int64_t> catch_up_due_{0};  ///< steady_clock ticks: when a search next looks for stale sessions
  std::atomic<std::uint64_t> local_changes_{0};
  std::mutex listings_mu_;
  std::unordered_map<std::string, CachedListing> listings_;  ///< by query; guarded by listings_mu_
  std::unique_ptr<SearchIndexer> indexer_;  ///< stopped first by the destructor (it calls index_session)

public:
  /// Listening for other processes' changes now (tests): waits up to `timeout`.
  bool wait_listening(std::chrono::milliseconds timeout);
};

} // namespace acp::store::pg
