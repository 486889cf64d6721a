// The listing index (docs/decisions.md#session-store): per log file, the header, latest title, updatedAt, size and
// mtime, so session/list and candidate search never read whole logs. It is a cache kept in
// memory and persisted outside the store root; it can be thrown away at any time.
//
// Freshness policy:
// - our own writers report every append/create/delete (record_write / record_delete): exact;
// - on start-up every bucket is swept and each log's (size, mtime) compared with the cached
//   entry: only new or changed files are read (cheaply, see log_summary);
// - on every listing the root's and each bucket's directory mtime is compared with the value seen
//   at the last scan; a changed directory (a file created, deleted or renamed by anyone) is swept
//   again. A directory modified within 100 ms of its scan is swept again on the next listing too,
//   because a coarse timestamp cannot tell two changes within one tick apart;
// - appends by other programs to existing files do not touch directory mtimes, so they are seen at
//   the next start-up sweep (or rebuild()).
// A missing, unreadable or foreign cache file is simply rebuilt.
#pragma once

#include "store/layout.hpp"
#include "store/session_types.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace acp::store {

/// A page request over the newest-first order.
struct ListQuery {
  std::optional<std::string> cwd;  ///< keep only sessions whose normalised cwd equals normalize_cwd(*cwd)
  bool with_cwd_only = false;      ///< drop cwd-less sessions (session/list)
  /// Keyset cursor: return only sessions strictly after (createdAt, id) in listing order.
  std::optional<std::pair<std::int64_t, std::string>> after;
  std::size_t limit = static_cast<std::size_t>(-1);
};

class ListingIndex {
public:
  /// `cache_file` empty: memory only.
  ListingIndex(std::string root, Encoding enc, Generation gen, std::string cache_file);

  /// Loads the cache file (if valid) and sweeps every bucket by (size, mtime).
  void start();
  /// Forgets everything and re-reads every log.
  void rebuild();
  /// Directory-mtime freshness check, then the ordered page (copies only the page).
  std::vector<SessionListing> list(const ListQuery& q);
  /// Same selection as list(), without copying: `fn` sees each row in order and returns false to
  /// stop. The rows are only valid during the call.
  void visit(const ListQuery& q, const std::function<bool(const SessionListing&)>& fn);

  /// Every listable log after the freshness check of list(), in no order: where it is (bucket,
  /// file below the root) and its row.
  void visit_logs(const std::function<void(const std::string& bucket, const std::string& file,
                                           const SessionListing& row)>& fn);

  /// After the freshness check of list(): a number that changes whenever visit_logs() would give
  /// another set of (id, place) pairs, so a caller can keep what it derived from the last visit.
  std::uint64_t refreshed_logs_version();

  void record_write(const std::string& bucket, const std::string& file, const SessionHeader& header,
                    const std::optional<std::string>& title, std::int64_t updated_at, std::uint64_t size,
                    std::int64_t mtime_ns);
  void record_delete(const std::string& bucket, const std::string& file);

  /// Writes the cache file if anything changed since the last save (tmp + rename, mode 0600).
  void save();
  /// The cache file's new text when anything changed (and marks it saved); write it with
  /// write_cache() outside the store's lock.
  std::optional<std::string> take_dirty_text();
  /// Writes `text` as the cache file (tmp + rename, mode 0600); a failure only costs a slower start.
  void write_cache(const std::string& text) const;

  /// Number of log summaries read so far (tests use it to prove unchanged files are not re-read).
  std::uint64_t files_read() const noexcept { return files_read_; }

private:
  struct Entry {
    std::optional<SessionListing> row;  ///< nullopt: not listable (no valid header)
    std::int64_t mtime_ns = 0;
    std::uint64_t size = 0;             ///< file size (also in row when listable)
    std::uint64_t seen = 0;             ///< sweep generation that last saw the file
  };
  struct Bucket {
    std::int64_t mtime_ns = -1;  ///< -1: unknown, sweep at next listing
    bool racy = true;
    std::map<std::string, Entry, std::less<>> files;
  };

  void load_cache();
  void refresh();
  void refresh_root(bool force);
  void sweep_bucket(const std::string& name, Bucket& b);
  void ensure_sorted();
  /// The harness's identity rule: the log's header derives the place it was found at.
  bool placed(const SessionHeader& h, const std::string& bucket, const std::string& file) const;

  std::string root_;
  Encoding enc_;
  Generation gen_;
  std::string cache_file_;
  std::int64_t root_mtime_ns_ = -1;
  bool root_racy_ = true;
  std::map<std::string, Bucket> buckets_;
  std::vector<const SessionListing*> sorted_;
  bool sorted_valid_ = false;
  std::uint64_t logs_version_ = 0;  ///< see refreshed_logs_version()
  bool dirty_ = false;
  std::uint64_t generation_ = 0;
  std::uint64_t files_read_ = 0;
  std::set<std::string> logged_empty_;  ///< 0.1 session directories without a log, logged once (bounded)
};

} // namespace acp::store
