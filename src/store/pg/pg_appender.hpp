// How a PgStore write sequence persists: the session's lock, a transaction held open on a connection
// of the writer's own (schema.hpp), and on a second one of its own one transaction per batch whose
// first seq is checked against the row. Also the statements a batch is made of, shared with
// PgStore::import_lines.
#pragma once

#include "store/backend.hpp"
#include "store/content_search.hpp"
#include "store/pg/connection.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::store::pg {

class PgStore;

/// One stored line: the seq of its (first) event, that event's normalised type and time, its text.
struct LineRow {
  std::int64_t seq = 0;
  std::string type;
  std::int64_t time = 0;
  std::string_view line;  ///< without '\n'
};

/// One text of an event for dsh_acp.search (schema.hpp, version 5).
struct SearchRow {
  std::int64_t seq = 0;
  std::int64_t part = 0;  ///< its place among the event's indexable texts
  TextKind kind = TextKind::user;
  std::string text;
  std::string words;  ///< its distinct content_words, joined by single spaces (never empty)
};

/// The search rows of one normalised event (store::indexable_texts); texts without a word are left out.
void add_search_rows(std::vector<SearchRow>& out, const boost::json::object& event);
/// The rows of add_search_rows without their words (texts without a word still in): what a writer
/// takes on its own path, leaving the words to the indexer (with_words).
void add_search_texts(std::vector<SearchRow>& out, const boost::json::object& event);
/// Fills in the words of rows from add_search_texts and drops the rows without one.
void with_words(std::vector<SearchRow>& rows);

/// Inserts the texts of lines [first, next) of own session `id`, committed (PgStore's indexer), and
/// moves its indexed_count from `first` to `next`, in one transaction: `rows` (with their words) stay
/// only when indexed_count was `first` (else nothing changes and false is returned: a gap, to be caught
/// up from the lines, or the range indexed already). Committed without waiting for the WAL flush and
/// not announced: texts lost with a crash go with their indexed_count, and a catch-up finds them.
bool insert_search_rows(PgConnection& c, const std::string& id, std::int64_t first, std::int64_t next,
                        const std::vector<SearchRow>& rows);

/// What a batch of lines makes of its session's row.
struct BatchEffect {
  std::int64_t first_seq = 0;  ///< the row's event_count before the batch
  std::int64_t next_seq = 0;   ///< and after it
  std::uint64_t bytes = 0;     ///< the lines' bytes, '\n' included
  std::optional<std::string> title;         ///< the batch's latest session/title
  std::optional<std::int64_t> updated_at;   ///< the batch's last event time
};

/// How a batch's own transaction commits.
enum class Commit {
  durable,  ///< as the server's synchronous_commit says, announced
  async,    ///< without waiting for the WAL flush (visible at once, made durable by the connection's next
            ///< durable commit), announced
  quiet,    ///< as async, not announced (kQuietCommit)
};

/// The connection is gone with `e` (lost, or ended by the server).
bool connection_gone(const PgError& e);

/// Inserts the row of a new session, owned by the connected role. SessionExists when the role has a
/// session of that id (another role's is no conflict).
void insert_session_row(PgConnection& c, const SessionHeader& h, Generation shape, std::string_view header_line);

/// Appends `rows` to session `id` (`where` names it in messages): the row's event_count must be
/// effect.first_seq (checked and moved on in the statement that inserts the lines, so a concurrent
/// change fails the batch: StoreError "log changed under the writer"). `in_transaction`: the caller
/// holds one (and says how it commits); else one is opened when the lines need more than one
/// statement, and `commit` says how it commits.
/// `search`: the lines' search rows, in seq order, inserted by the same statements (and so in the
/// same transaction) as the lines their seqs fall in. `deferred`: the lines' texts are left to the
/// store's indexer, so indexed_count stays where it is; otherwise it moves on with event_count when
/// the two were equal (the session's texts stay complete).
void insert_lines(PgConnection& c, const std::string& where, const std::string& id, const std::vector<LineRow>& rows,
                  const BatchEffect& effect, bool in_transaction, Commit commit = Commit::durable,
                  const std::vector<SearchRow>& search = {}, bool deferred = false);

class PgAppender final : public Appender {
public:
  /// `conn`: the writer's own connection for its batches, `lock_conn` for its lock (both given back
  /// to the store's pool by release()). The lock is taken by lock() or claim().
  PgAppender(PgStore& store, PgConnection conn, PgConnection lock_conn, std::string id, Generation shape);
  ~PgAppender() override { release(); }

  /// Takes the session's lock (PgStore::lock_session).
  void lock(const LockWait& wait);
  /// Takes an existing session's lock (PgStore::claim_session).
  void claim(const LockWait& wait);
  PgConnection& connection() { return *conn_; }
  void set_shape(Generation g) { shape_ = g; }
  /// The stored header line of a published session (open()); create() makes it at the first write.
  void set_header_line(std::string line) { header_line_ = std::move(line); }

  void write(KnownLog& log, const std::string& lines, const std::vector<boost::json::object>& records,
             bool sync) override;
  void committed(const KnownLog& log) override;
  /// A batch written with sync == false commits without waiting for the WAL flush (as a file's
  /// unsynced write reaches the page cache, not the disk); a sync batch commits as the server's
  /// synchronous_commit says, which makes every earlier commit durable with it. sync() without a
  /// batch flushes by a durable commit of its own, when unsynced batches are pending.
  void sync(KnownLog& log) override;
  /// False once a connection was lost (the lock's, or the batches': the writer is done).
  bool held() const noexcept override { return conn_.has_value() && lock_conn_.has_value() && locked_ && !lost_; }
  void release() noexcept override;

private:
  PgStore* store_;
  std::optional<PgConnection> conn_;
  std::optional<PgConnection> lock_conn_;
  std::string id_;
  Generation shape_;
  std::string header_line_;
  bool locked_ = false;
  bool lost_ = false;
  bool unsynced_ = false;  ///< batches committed without the flush since the last durable commit

  /// Throws when the lock is no longer held: its connection was ended (the server said so).
  void check_held();
};

} // namespace acp::store::pg
