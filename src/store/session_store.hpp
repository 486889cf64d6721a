// The session store facade: one root of logs in the harness's format (docs/store-format.md, with the policy
// of docs/decisions.md#session-store). Owns the root's encoding, id -> file lookup, lock-free readers
// (committed prefix, never modifying anything), writers (lock, refresh, repair, append), deletion, and the
// listing index. Thread-safe: the internal caches are guarded by one mutex; writers on *different* sessions
// run independently, two writers on one session exclude each other through the lock.
#pragma once

#include "store/backend.hpp"
#include "store/layout.hpp"
#include "store/listing_index.hpp"
#include "store/log_scan.hpp"
#include "store/log_state.hpp"
#include "store/session_types.hpp"
#include "store/session_writer.hpp"
#include "store/store_options.hpp"

#include <boost/json/object.hpp>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace acp::store {

class ContentIndex;
struct ContentLog;
struct ContentListing;

/// What the file backend knows of a log file as of its last read or write: when the file still
/// matches, nobody wrote it since and it need not be read again.
struct FileStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t ino = 0, dev = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp file_stamp(const struct stat& st);

class SessionStore final : public Backend {
public:
  /// Detects the root's encoding; throws EncodingMismatch when the root holds both encodings or
  /// the requested one contradicts it. Loads and sweeps the listing index.
  explicit SessionStore(StoreOptions options);
  /// The layout and encoding checks of the constructor alone (no index, nothing created): throws
  /// what opening the root would throw about them.
  static void check_root(const StoreOptions& options);
  ~SessionStore();
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

  const std::string& root() const noexcept { return root_; }
  const std::string& name() const noexcept override { return root_; }
  Encoding encoding() const noexcept { return encoding_; }
  Generation generation() const noexcept override { return generation_; }
  bool read_only() const noexcept override { return read_only_; }

  /// Path the log of a session with this header has (whether or not it exists). Throws
  /// InvalidSessionId / IdTooLong.
  std::string log_path(const SessionHeader& header) const;
  /// Path of the existing log of `id`, nullopt when none. Throws on duplicates across buckets or a
  /// file of the other encoding (incompatible artifact).
  std::optional<std::string> find_log(const std::string& id) override;

  // ---- readers: no lock, committed prefix, never modify a log ----

  /// Streams every committed event to `sink` in order; memory is bounded by one read chunk or one
  /// zstd frame. A hard error found after some events were delivered is still thrown. `stop` is
  /// checked per line; once requested the read ends with ReadCancelled. `lifetime`: whether the
  /// sink keeps events (see EventLifetime).
  StreamResult read_events(const std::string& id, const EventSink& sink, std::stop_token stop = {},
                           EventLifetime lifetime = EventLifetime::kept) override;
  /// foldSurface over the log (docs/store-format.md#reading-a-surface). Throws FoldError on an invalid surface.
  SurfaceSnapshot read_surface(const std::string& id);
  /// Latest session/title by log position, nullopt when none.
  std::optional<TitleInfo> read_title(const std::string& id);

  /// Newest first by createdAt, ties by id in en-US collation; served from the listing index.
  std::vector<SessionListing> list_sessions(const ListQuery& query = {}) override;
  bool has_session_other_than(const std::string& id) override;
  /// The same rows without copying them (candidate search over all sessions): `fn` returns false
  /// to stop. It runs under the store's lock: it must not call back into the store.
  void visit_sessions(const ListQuery& query, const std::function<bool(const SessionListing&)>& fn);
  /// Forgets the index and re-reads every log (cheaply).
  void rebuild_index();
  /// Persists the index now (also done after listings and on destruction).
  void flush_index();
  void flush() override { flush_index(); }
  /// Number of logs the index has read since start-up (for tests and benchmarks).
  std::uint64_t index_files_read();

  // ---- recall by content (content_index.hpp, docs/recall.md#file-stores) ----

  /// Catches the content index up with the listing (logs changed by any process since), then
  /// queries it. Without a cache directory, or when the index cannot be used, the plain scan.
  std::vector<ContentHit> search_content(const ContentQuery& query, std::stop_token stop = {}) override;
  /// Builds or catches up the content index (`dsh-acp store index`), rebuilding its FTS table
  /// when rows of forgotten sessions are a large share.
  IndexProgress index_content(const IndexProgressFn& progress = {}, std::stop_token stop = {}) override;
  /// The content index, opened on first use (nullptr without a cache directory). Once open, our
  /// own commits are indexed in the background.
  ContentIndex* content_index();

  // ---- writers ----

  /// A writer for a new session (nothing is written until the first append). Throws
  /// SessionExists, SessionBusy, InvalidSessionId/IdTooLong.
  SessionWriter create(const SessionHeader& header, const LockWait& wait = {}) override;
  /// A writer for an existing session, after refresh and (if needed) repair. Throws
  /// SessionNotFound, SessionBusy, StoreCorrupt.
  SessionWriter open(const std::string& id, const LockWait& wait = {}) override;

  /// Removes the log and its index entry. Throws SessionNotFound, SessionBusy.
  void delete_session(const std::string& id, const LockWait& wait = {}) override;

  // ---- copying between stores (file_export.cpp) ----

  /// The log's plaintext lines verbatim (a zstd log decompressed): its header line, then every
  /// committed event line from `from_seq` on. Throws StoreError when `from_seq` falls inside a
  /// packed chunk row, or for a flat log left in a 0.1 root (its lines are not in the root's shape).
  Generation export_lines(const std::string& id, const std::function<void(std::string_view)>& header,
                          const std::function<void(std::string_view)>& line, std::int64_t from_seq = 0) override;
  /// Appends verbatim lines as one batch under the session's lock (a new log is published whole,
  /// header included). An open turn at the end of the log is not closed: the lines that follow
  /// are the source's own. A torn tail (a copy killed mid-batch) is cut first.
  void import_lines(const std::string& id, Generation g, const std::string& header_line, std::int64_t first_seq,
                    const std::vector<std::string>& lines) override;
  /// Every log file under the root (also those the listing skips: an invalid header, a flat log
  /// in a 0.1 root), for `dsh-acp store verify` and `copy`.
  std::vector<std::string> log_paths() const;
  /// `dsh-acp store verify`: every plaintext line of the log at `path`, strictly (not the reader's
  /// committed prefix): `problem` gets the 1-based line and why for an invalid header or one that
  /// does not match the log's place, a line that is no record or breaks the seq sequence, a torn
  /// tail. Returns the header's id ("" when there is no valid header). Throws StoreCorrupt for
  /// framing the log cannot be read past.
  std::string check_log_file(const std::string& path, const std::function<void(std::int64_t, const std::string&)>& problem);

  /// Recreates the root (0700, like at start-up) if it was deleted while we run, so the next write
  /// works instead of failing until a restart. Called before every new log is created.
  void ensure_root();

private:
  friend class FileAppender;
  void detect_layout(const StoreOptions& options);
  std::vector<std::string> bucket_dirs() const;
  /// Why the log at `path` must not be written, or "" when it may be.
  std::string read_only_reason(const std::string& path) const;
  /// The lock file guarding the log at `path`.
  std::string lock_path_of(const std::string& path, const std::string& id) const;
  /// Creates the directories the log at `path` lives in (0700), each made durable in its parent.
  void ensure_log_dirs(const std::string& path);
  /// A log as the cache holds it: the writer's view and the file it was taken from.
  struct FileLog {
    KnownLog log;
    FileStamp stamp;
  };
  FileLog load_for_write(const std::string& id, const std::string& path, UniqueFd& fd);
  /// load_for_write without repair (import_lines): cached when unchanged, even with a turn open.
  FileLog load_for_import(const std::string& id, const std::string& path, int fd);
  /// The cached log of `id` when it was read from `path` and the file still matches `now`.
  std::optional<FileLog> cached(const std::string& id, const std::string& path, const FileStamp& now);
  void check_identity(const SessionHeader& h, const std::string& id, const std::string& path) const;
  void remember(const KnownLog& log, const FileStamp& stamp);  // writer -> caches and index
  /// The listing index's key of the log at `path`: its bucket (the root's child) and the rest.
  std::pair<std::string, std::string> index_key(const std::string& path) const;
  void persist_index(const std::string& text, std::uint64_t generation);
  /// Every listed log, for the content index: kept while the listing's logs stay the same.
  ContentListing content_logs();

  std::string root_;
  Encoding encoding_ = Encoding::zstd;
  Generation generation_ = Generation::flat;
  bool read_only_ = false;
  std::chrono::milliseconds lock_timeout_;
  std::mutex mu_;
  std::unordered_map<std::string, FileLog> known_;
  std::unique_ptr<ListingIndex> index_;
  std::uint64_t index_generation_ = 0;  ///< guarded by mu_
  std::mutex persist_mu_;               ///< orders cache-file writes
  std::uint64_t persisted_generation_ = 0;

  std::string content_file_;  ///< "" without a cache directory
  std::mutex content_mu_;     ///< opening the content index
  std::unique_ptr<ContentIndex> content_;
  std::shared_ptr<const std::vector<ContentLog>> content_logs_;  ///< guarded by mu_
  std::uint64_t content_logs_version_ = 0;                         ///< guarded by mu_
  /// Read by writers without a lock: non-null once the index is open, so commits are handed to it.
  std::atomic<ContentIndex*> content_live_{nullptr};
};

} // namespace acp::store
