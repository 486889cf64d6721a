// The content index of one file root (docs/recall.md#file-stores): a SQLite FTS5 database under the
// cache directory, derived from the logs, which stay the only truth. It may be deleted at any time;
// a corrupt, foreign or unopenable file is deleted and built again.
//
// Layout: `sessions` records, per log, the file state the index has caught up with (size, mtime,
// inode, events indexed, committed bytes); `docs` maps each FTS row to a run of one session's
// events (one turn's texts at most, split when long); `fts` is contentless (the texts live in the
// logs) and detail=column (no positions: ranking needs only which rows hold a term), so the index
// stays a fraction of the logs. A session's record moves forward only in the transaction that adds its
// rows, so a process killed at any point leaves a state that is right for what it records.
//
// Rows of a session re-indexed from scratch (a log rewritten shorter, replaced, deleted) cannot be
// removed from a contentless table without their texts: their `docs` rows are deleted, which makes
// them unreachable, and `dsh-acp store index` rebuilds the table once they are a large share.
#pragma once

#include "store/content_search.hpp"
#include "store/layout.hpp"
#include "support/unique_fd.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct sqlite3;

namespace acp::store {

/// A log the listing holds.
struct ContentLog {
  std::string id;
  std::string path;
};

/// The listing's logs at one version (ListingIndex::refreshed_logs_version): the same version
/// promises the same logs, so a catch-up need not walk them again.
struct ContentListing {
  std::uint64_t version = 0;
  std::shared_ptr<const std::vector<ContentLog>> logs;
};

/// One committed batch, handed over by the writer so the background indexer need not read the log
/// again.
struct CommittedEvents {
  /// What the indexer takes from a batch's events.
  struct Event {
    std::int64_t seq = 0;
    bool turn_start = false;
    std::vector<IndexableText> texts;
  };
  std::string id, path;
  std::uint64_t size = 0, ino = 0;  ///< the file after the batch
  std::int64_t mtime_ns = 0;
  std::int64_t first_seq = 0, end_seq = 0;  ///< the batch holds seqs [first_seq, end_seq)
  std::string lines;                        ///< the batch's events as written: JSON lines (plain text)
  bool reread = false;                      ///< the events are unknown: read the log
};

class ContentIndex {
public:
  /// `file`: the database path ("" = in memory, for tests); `root_key` names the root it indexes
  /// (a file made for another root or schema is rebuilt). Starts the background indexer.
  ContentIndex(std::string file, std::string root_key, Encoding encoding);
  ~ContentIndex();
  ContentIndex(const ContentIndex&) = delete;
  ContentIndex& operator=(const ContentIndex&) = delete;

  /// Brings the index up to date with the listing: every log whose (size, mtime, inode) differs
  /// from its record is indexed from where its record ends (from scratch when it shrank or was
  /// replaced); records of logs no longer listed are forgotten. While the listing's version stays
  /// the same, only the logs an inotify event named are looked at. `compact`: look at every log,
  /// and rebuild the FTS table when unreachable rows are a large share (`dsh-acp store index`).
  IndexProgress catch_up(const ContentListing& listing, const IndexProgressFn& progress, std::stop_token stop,
                         bool compact);

  /// The sessions of the listing last caught up with whose texts match, best first.
  std::vector<ContentHit> search(const ContentQuery& query, std::stop_token stop);

  /// Queues a committed batch for the background indexer; never blocks on the index. A full
  /// queue drops it (the next search's catch-up reads the log instead).
  void post(CommittedEvents batch);
  /// Waits until the background queue is empty and its last batch applied (tests, benchmarks).
  void drain();

  /// The database file ("" in memory).
  const std::string& file() const noexcept { return file_; }
  /// Logs read to index them so far (tests prove the writer's batches spare the reads).
  std::uint64_t logs_read() const noexcept { return logs_read_.load(); }

private:
  struct Record {
    std::int64_t sid = 0;
    std::uint64_t size = 0, ino = 0, bytes = 0;
    std::int64_t mtime_ns = 0, count = 0;
    /// A hash of the log's first head_len bytes: a log deleted and written again under the same
    /// id (an inode may be reused, the size may grow) is not taken for a continuation.
    std::int64_t head = 0, head_len = 0;
  };

  void open_db();
  void reset_db(const std::string& why);
  void close_db() noexcept;
  void exec(const char* sql);
  void reload_if_changed();
  void load_records();
  std::optional<Record> db_record(const std::string& id);
  void forget_rows(std::int64_t sid);
  std::int64_t put_record(const std::string& id, const Record& r);
  /// Adds the rows of `events` from seq `start` on; returns the texts' bytes.
  std::size_t insert_docs(std::int64_t sid, const std::vector<CommittedEvents::Event>& events, std::int64_t start = 0);
  /// Indexes what the log at `log.path` holds beyond its record (inside a transaction); returns
  /// the texts' bytes added. The new record goes to `updated`, for after the commit.
  std::size_t index_log(const ContentLog& log, std::vector<std::pair<std::string, Record>>& updated,
                        std::stop_token stop);
  /// The listed logs a catch-up must index (`everything`: each one whose state differs from its
  /// record); records of logs no longer listed are forgotten.
  std::vector<const ContentLog*> changed_logs(const ContentListing& listing, bool everything);
  /// Empties the FTS table when unreachable rows are a quarter of all; true if it did.
  bool rebuild_if_mostly_unreachable();
  /// Indexes `changed` in transactions of a few hundred sessions or MB each.
  void index_logs(const std::vector<const ContentLog*>& changed, IndexProgress& p, const IndexProgressFn& progress,
                  std::stop_token stop);
  /// The listed sessions whose rows match, best first: (id, path, first seq, last seq, score).
  struct Found {
    std::string id, path;
    std::int64_t first = 0, last = 0;
    double score = 0;
  };
  std::vector<Found> ranked_sessions(const std::vector<std::string>& terms, const ContentQuery& query,
                                     std::stop_token stop);
  /// The hit of a found session: its best event's text from the log (nullopt: the log changed).
  std::optional<ContentHit> read_hit(const Found& f, const std::vector<std::string>& terms, std::stop_token stop);
  /// Indexes a batch (`parsed`: its events, nullopt: read the log).
  void apply(const CommittedEvents& batch, const std::optional<std::vector<CommittedEvents::Event>>& parsed);
  /// Takes records committed to the database into records_ and ids_.
  void remember(const std::vector<std::pair<std::string, Record>>& updated);
  void rebuild_fts();
  void worker(std::stop_token stop);
  template <class F> auto guarded(F&& f) -> decltype(f());

  std::string file_, root_key_;
  Encoding encoding_;
  /// Reads the pending inotify events into dirty_ (or overflow_).
  void read_changes();
  /// Whether the log at `path` may have changed since it was last looked at: its directory is not
  /// watched yet (a watch is added now) or cannot be, or an event named it.
  bool may_have_changed(const std::string& path, const std::unordered_set<std::string>& dirty);

  std::mutex mu_;  ///< the connection, the records, the watches
  sqlite3* db_ = nullptr;
  // Changes to the logs' directories (inotify): a catch-up stats only the logs something happened
  // to, not every log. Empty: no inotify, every log is stat'ed.
  support::UniqueFd inotify_fd_;
  std::unordered_map<int, std::string> watched_;     ///< watch -> directory
  struct Watch {
    int wd = -1;                ///< -1: cannot be watched
    std::uint64_t since = 0;    ///< the catch-up that added it
  };
  std::unordered_map<std::string, Watch> watches_;   ///< directory -> its watch
  std::uint64_t catch_ups_ = 0;
  std::unordered_set<std::string> dirty_;            ///< logs named by an event since the last catch-up
  bool overflow_ = false;                            ///< events were lost: look at every log
  std::int64_t data_version_ = -1;
  bool reloaded_ = false;      ///< load_records() ran since the last catch-up
  bool unwatched_ = true;      ///< a log's directory has no watch: the next catch-up walks every log
  ContentListing listing_;     ///< the listing last caught up with
  std::unordered_map<std::string_view, const ContentLog*> by_id_, by_path_;  ///< into listing_
  std::unordered_map<std::string, Record> records_;
  std::unordered_map<std::int64_t, std::string> ids_;  ///< sid -> id

  std::mutex queue_mu_;
  std::condition_variable_any queue_cv_;
  std::map<std::string, CommittedEvents> queue_;
  std::size_t queued_bytes_ = 0;
  bool busy_ = false;
  int draining_ = 0;  ///< drain() callers waiting: the indexer does not gather
  std::atomic<std::uint64_t> logs_read_{0};
  std::jthread worker_;
};

} // namespace acp::store
