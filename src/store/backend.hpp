// The store seam: one backend per kind of store (a root of harness log files, a PostgreSQL
// database). Every backend serves the same normalised event model (event_model.hpp) to readers and
// takes the same records from SessionWriter, which owns the backend-independent write logic (seqs,
// times, 0.1 ids and shapes, the log state) and persists through the backend's Appender.
// Every call may block (file or database I/O, lock waits): call them off the connection thread.
#pragma once

#include "store/content_search.hpp"
#include "store/layout.hpp"
#include "store/listing_index.hpp"
#include "store/log_scan.hpp"
#include "store/log_state.hpp"
#include "store/session_lock.hpp"
#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace acp::store {

class SessionWriter;

/// All committed events of one log (inspect semantics: zstd records recovered from a torn final
/// frame included, no truncation, no closers).
struct LogSnapshot {
  std::string path;
  SessionHeader header;
  std::vector<boost::json::object> events;
};

/// The result of a streaming read.
struct StreamResult {
  std::string path;
  SessionHeader header;
  std::optional<std::int64_t> capturedThroughSeq;
};

/// What a writer knows about one log, whichever the backend. `path` names the log in messages
/// (a file path, or the store's redacted URL and the id). What only one backend needs (a file's
/// size and inode) stays in that backend's appender and caches.
struct KnownLog {
  std::string id, path;
  SessionHeader header;
  LogState state;
  bool on_disk = false;  ///< false until the first append publishes the log (header included)
};

/// A log found in the store (published already), as each backend's loader hands it to a writer.
inline KnownLog published_log(std::string id, std::string path, SessionHeader header, LogState state = {}) {
  KnownLog log;
  log.id = std::move(id);
  log.path = std::move(path);
  log.header = std::move(header);
  log.state = std::move(state);
  log.on_disk = true;
  return log;
}

/// How one write sequence persists: owned by a SessionWriter, holding the session's write lock
/// from creation to release().
class Appender {
public:
  virtual ~Appender() = default;
  /// Persists one batch: `lines` is the batch's log text (one record per line, each ending in
  /// '\n', in the store's shape), `records` the same records normalised. When `!log.on_disk` the
  /// log is published with its header first. Either the whole batch becomes visible to readers or
  /// none of it does (then it throws). Sets `log.on_disk` once the log is published.
  /// `sync`: durable before returning.
  virtual void write(KnownLog& log, const std::string& lines, const std::vector<boost::json::object>& records,
                     bool sync) = 0;
  /// write() for a batch of `count` plain assistant/chunk lines (store/chunk_lines.hpp) numbered
  /// from log.state.count(), for which no records were built. The default parses the lines back
  /// into records for write(); a backend that needs no records overrides it.
  virtual void write_plain(KnownLog& log, const std::string& lines, std::int64_t count, bool sync);
  /// After a write, once `log.state` has observed the batch: caches and listings may learn it.
  virtual void committed(const KnownLog& log) { (void)log; }
  /// Makes every write so far durable (no-op when nothing is pending).
  virtual void sync(KnownLog& log) = 0;
  virtual bool held() const noexcept = 0;
  /// Releases the write lock without syncing (SessionWriter::release syncs first). Idempotent;
  /// the appender is unusable afterwards. A backend may let go without waiting for the lock's
  /// server to confirm (PostgreSQL): a writer that waits for the lock gets it a moment later, one
  /// that only tries at once may still find it held.
  virtual void release() noexcept = 0;
};

class Backend {
public:
  virtual ~Backend() = default;

  /// Names the store in messages and logs: the root path, or the URL without its password.
  virtual const std::string& name() const noexcept = 0;
  /// The shape this store writes new sessions in.
  virtual Generation generation() const noexcept = 0;
  virtual bool read_only() const noexcept = 0;

  /// Where the log of `id` is (a path, or name() and the id), nullopt when the store has none.
  /// Throws for a store that cannot answer (a duplicate across buckets, an unreachable database).
  virtual std::optional<std::string> find_log(const std::string& id) = 0;
  bool exists(const std::string& id) { return find_log(id).has_value(); }

  // ---- readers: no lock, committed prefix, never modify a log ----

  /// Whole committed log in memory: read_events collecting every event. Throws SessionNotFound /
  /// StoreCorrupt.
  virtual LogSnapshot read_log(const std::string& id);
  /// Streams every committed event to `sink` in order; memory bounded by a chunk of the log, not
  /// its size. `stop` is checked per line (then ReadCancelled).
  virtual StreamResult read_events(const std::string& id, const EventSink& sink, std::stop_token stop = {},
                                   EventLifetime lifetime = EventLifetime::kept) = 0;
  /// Newest first by createdAt, ties by id in en-US collation, after `query.after`, at most
  /// `query.limit` rows.
  virtual std::vector<SessionListing> list_sessions(const ListQuery& query = {}) = 0;
  /// Whether a listed session other than `id` exists (the recall tool is offered then). Asked once
  /// per session on the prompt's path: a backend answers without building a listing page.
  virtual bool has_session_other_than(const std::string& id);

  // ---- writers ----

  /// A writer for a new session (nothing is written until the first append). Throws
  /// SessionExists, SessionBusy, InvalidSessionId.
  virtual SessionWriter create(const SessionHeader& header, const LockWait& wait = {}) = 0;
  /// A writer for an existing session, after refresh and (if needed) repair. Throws
  /// SessionNotFound, SessionBusy, StoreCorrupt, SessionReadOnly.
  virtual SessionWriter open(const std::string& id, const LockWait& wait = {}) = 0;
  /// open() when the log exists, else create(header).
  virtual SessionWriter open_or_create(const SessionHeader& header, const LockWait& wait = {});
  /// Removes the session. Throws SessionNotFound, SessionBusy.
  virtual void delete_session(const std::string& id, const LockWait& wait = {}) = 0;

  // ---- copying between stores (`dsh-acp store copy`), byte for byte ----

  /// The stored text of `id`: `header` gets the header line, then `line` each committed event line
  /// from seq `from_seq` on, in order, verbatim (no '\n'). Returns the shape the lines are in.
  /// Throws SessionNotFound / StoreCorrupt; StoreError when the backend cannot export.
  virtual Generation export_lines(const std::string& id, const std::function<void(std::string_view)>& header,
                                  const std::function<void(std::string_view)>& line, std::int64_t from_seq = 0);
  /// Appends lines verbatim as one atomic batch: `first_seq` must be the log's event count (0 with
  /// `header_line` creates the log). Every backend checks the batch with import_check.hpp, so the
  /// same mistake is the same InvalidBatch: lines a reader would refuse, or a wrong `first_seq`.
  /// Throws StoreError when the backend cannot hold lines of generation `g`, SessionExists when
  /// `first_seq` is 0 and the log exists, SessionNotFound when it is not and the log does not.
  virtual void import_lines(const std::string& id, Generation g, const std::string& header_line,
                            std::int64_t first_seq, const std::vector<std::string>& lines);

  // ---- people (a PostgreSQL store; a file root is one person's) ----

  /// Whether set_shared can work here: a store with people (PostgreSQL).
  virtual bool supports_sharing() const noexcept { return false; }
  /// The person this store reads and writes as (a PostgreSQL role), compared with a listing's
  /// `owner` to tell someone else's (read-only) session; nullopt for a store without people.
  virtual std::optional<std::string> person() const { return std::nullopt; }
  /// Marks a session of the connected person shared (or not). SharingUnsupported where not
  /// supported, SessionNotFound when the person cannot see it, SessionReadOnly when it is someone else's.
  virtual void set_shared(const std::string& id, bool shared);

  // ---- recall by content (docs/recall.md) ----

  /// Sessions whose texts (indexable_texts) hold terms of `query.words` (content_terms), best first,
  /// at most `query.limit`, one hit per session: only sessions this store lists to its person (a
  /// PostgreSQL role finds nothing it cannot read, and the ranking reveals nothing of others'
  /// sessions). An index is brought up to date with logs changed since (by any process) first.
  /// Empty when no term survives. This default scans every log (the baseline the benchmark
  /// compares an index with); stores with an index override it. `stop` is checked per event.
  virtual std::vector<ContentHit> search_content(const ContentQuery& query, std::stop_token stop = {});
  /// Builds the index when missing, catches up changed logs and forgets deleted ones
  /// (`dsh-acp store index`); `progress` is called now and then. Returns the final progress. The
  /// default (no index) only counts the sessions.
  virtual IndexProgress index_content(const IndexProgressFn& progress = {}, std::stop_token stop = {});

  /// Persists whatever the backend caches (a file root's listing index). Also done on destruction.
  virtual void flush() {}
};

} // namespace acp::store
