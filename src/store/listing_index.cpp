#include "store/listing_index.hpp"

#include "support/json_text.hpp"
#include "store/collation.hpp"
#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/log_summary.hpp"
#include "store/records.hpp"
#include "support/log.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <unordered_map>

namespace acp::store {

namespace json = boost::json;

namespace {

constexpr std::int64_t kRacyWindowNs = 100'000'000;
constexpr int kCacheVersion = 3;

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool stat_at(int dfd, std::string_view name, struct stat& st) {
  char buf[512];
  if (name.size() >= sizeof buf) return false;
  name.copy(buf, name.size());
  buf[name.size()] = '\0';
  return ::fstatat(dfd, buf, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

} // namespace

ListingIndex::ListingIndex(std::string root, Encoding enc, Generation gen, std::string cache_file)
    : root_(std::move(root)), enc_(enc), gen_(gen), cache_file_(std::move(cache_file)) {}

bool ListingIndex::placed(const SessionHeader& h, const std::string& bucket, const std::string& file) const {
  try {
    if (gen_ == Generation::flat) return bucket_name(h.cwd) == bucket && log_file_name(h.id, enc_) == file;
    if (file.find('/') == std::string::npos) return log_file_name(h.id, enc_) == file;  // flat log in a 0.1 root
    return project_dir_name(h.cwd) == bucket && log_entry_name(gen_, h.id, enc_) == file;
  } catch (const StoreError&) {
    return false;  // an id or cwd no path can be made of is nobody's log
  }
}

void ListingIndex::start() {
  load_cache();
  refresh_root(true);
  for (auto& [name, b] : buckets_) sweep_bucket(name, b);
  save();
}

void ListingIndex::rebuild() {
  buckets_.clear();
  root_mtime_ns_ = -1;
  sorted_valid_ = false;
  ++logs_version_;
  dirty_ = true;
  refresh_root(true);
  for (auto& [name, b] : buckets_) sweep_bucket(name, b);
  save();
}

void ListingIndex::load_cache() {
  if (cache_file_.empty()) return;
  UniqueFd fd = open_nofollow(cache_file_, O_RDONLY);
  if (!fd) return;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return;
  std::string text = pread_some(fd.get(), 0, std::size_t(st.st_size), cache_file_);
  // Into a monotonic arena, which avoids tens of thousands of small heap allocations on a cold
  // start. Our own file, but read back from disk as any other: through parse_json.
  json::monotonic_resource arena;
  boost::system::error_code ec;
  json::value v = support::parse_json(text, ec, nullptr, &arena);
  // Anything unexpected means "no cache": the sweep rebuilds whatever is missing.
  try {
    if (ec || !v.is_object()) return;
    const auto& o = v.get_object();
    if (o.at("version") != kCacheVersion || o.at("root").as_string() != root_ ||
        o.at("encoding").as_string() != encoding_name(enc_))
      return;
    std::map<std::string, Bucket> loaded;
    std::vector<std::pair<std::int64_t, const SessionListing*>> ranked;
    for (const auto& [bname, bv] : o.at("buckets").as_object()) {
      Bucket& b = loaded[std::string(bname)];
      // Each file: [name, size, mtime, updatedAt, header-or-null, title-or-null, listing rank]
      for (const auto& fv : bv.as_array()) {
        const auto& f = fv.as_array();
        Entry e;
        e.size = f.at(1).to_number<std::uint64_t>();
        e.mtime_ns = f.at(2).to_number<std::int64_t>();
        if (f.at(4).is_object()) {
          auto h = parse_header(f.at(4));
          if (!h) return;
          SessionListing row;
          row.header = std::move(*h);
          row.updatedAt = f.at(3).to_number<std::int64_t>();
          row.sizeBytes = e.size;
          if (f.at(5).is_string()) row.title = std::string(f.at(5).get_string());
          e.row = std::move(row);
        }
        auto [it, inserted] = b.files.emplace(std::string(f.at(0).as_string()), std::move(e));
        if (inserted && it->second.row && f.size() > 6) ranked.emplace_back(f.at(6).to_number<std::int64_t>(), &*it->second.row);
      }
    }
    // std::map nodes survive the move, so the row pointers stay valid.
    buckets_ = std::move(loaded);
    // The saved listing order spares a new process the ICU collator and the sort until
    // something changes (any change invalidates it).
    std::sort(ranked.begin(), ranked.end());
    bool ranks_ok = true;
    sorted_.clear();
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      ranks_ok = ranks_ok && ranked[i].first == std::int64_t(i);
      sorted_.push_back(ranked[i].second);
    }
    std::size_t listable = 0;
    for (const auto& [bn, bk] : buckets_)
      for (const auto& [fn, en] : bk.files) listable += en.row ? 1 : 0;
    sorted_valid_ = ranks_ok && listable == sorted_.size();
    ++logs_version_;
  } catch (const std::exception&) {
    buckets_.clear();
    ++logs_version_;
  }
}

std::optional<std::string> ListingIndex::take_dirty_text() {
  if (!dirty_ || cache_file_.empty()) return std::nullopt;
  ensure_sorted();
  std::unordered_map<const SessionListing*, std::int64_t> rank;
  rank.reserve(sorted_.size());
  for (std::size_t i = 0; i < sorted_.size(); ++i) rank.emplace(sorted_[i], std::int64_t(i));
  json::monotonic_resource arena;
  json::object buckets(&arena);
  for (const auto& [bname, b] : buckets_) {
    json::array files(&arena);
    files.reserve(b.files.size());
    for (const auto& [fname, e] : b.files) {
      json::array f(&arena);
      f.emplace_back(fname);
      f.emplace_back(e.size);
      f.emplace_back(e.mtime_ns);
      if (e.row) {
        f.emplace_back(e.row->updatedAt);
        f.emplace_back(header_record(e.row->header));
        f.emplace_back(e.row->title ? json::value(*e.row->title) : json::value(nullptr));
        f.emplace_back(rank.at(&*e.row));
      } else {
        f.emplace_back(0);
        f.emplace_back(nullptr);
        f.emplace_back(nullptr);
      }
      files.emplace_back(std::move(f));
    }
    buckets[bname] = std::move(files);
  }
  json::object o(&arena);
  o["version"] = kCacheVersion;
  o["root"] = root_;
  o["encoding"] = encoding_name(enc_);
  o["buckets"] = std::move(buckets);
  dirty_ = false;
  return support::to_json_text(o);
}

void ListingIndex::write_cache(const std::string& text) const {
  std::string dir = cache_file_.substr(0, cache_file_.rfind('/'));
  try {
    if (!dir.empty()) ensure_private_dir(dir);
    std::string tmp = cache_file_ + "." + random_hex12() + ".tmp";
    UniqueFd fd = open_nofollow(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (!fd) throw_errno("create", tmp, errno);
    write_all(fd.get(), text, tmp);
    fd.reset();
    if (::rename(tmp.c_str(), cache_file_.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      throw_errno("rename", tmp, err);
    }
  } catch (const StoreError&) {
    // The index is a cache: failing to persist it only costs a slower next start.
  }
}

void ListingIndex::save() {
  if (auto text = take_dirty_text()) write_cache(*text);
}

void ListingIndex::refresh_root(bool force) {
  struct stat st {};
  if (!lstat_path(root_, st)) {
    if (!buckets_.empty()) {
      buckets_.clear();
      sorted_valid_ = false;
      ++logs_version_;
      dirty_ = true;
    }
    return;
  }
  const std::int64_t m = mtime_ns(st);
  if (!force && !root_racy_ && m == root_mtime_ns_) return;
  const std::int64_t scanned_at = realtime_ns();
  std::vector<std::string> present;
  for_each_dir_entry(root_, [&](std::string_view n, int dfd) {
    struct stat bst {};
    if (is_bucket_dir_name(gen_, n) && stat_at(dfd, n, bst) && S_ISDIR(bst.st_mode))
      present.emplace_back(n);  // symlinks skipped
  });
  std::sort(present.begin(), present.end());
  for (const auto& n : present) buckets_.try_emplace(n);
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (!std::binary_search(present.begin(), present.end(), it->first)) {
      it = buckets_.erase(it);
      sorted_valid_ = false;
      ++logs_version_;
      dirty_ = true;
    } else {
      ++it;
    }
  }
  root_mtime_ns_ = m;
  root_racy_ = scanned_at - m < kRacyWindowNs;
}

void ListingIndex::sweep_bucket(const std::string& name, Bucket& b) {
  const std::string dir = root_ + "/" + name;
  struct stat dst {};
  if (!lstat_path(dir, dst)) return;
  const std::int64_t dir_mtime = mtime_ns(dst);  // taken before reading: later changes re-trigger
  const std::int64_t scanned_at = realtime_ns();
  const std::uint64_t gen = ++generation_;
  const std::string v01_log = "/" + v01_log_name(enc_);
  for_each_dir_entry(dir, [&](std::string_view entry, int dfd) {
    struct stat st {};
    std::string key;
    std::string_view n = entry;
    if (!is_log_file_name(entry, enc_)) {
      // 0.1: a session directory holding its log; one without it is not a session (yet).
      if (gen_ != Generation::project_dirs) return;
      key = std::string(entry) + v01_log;
      n = key;
    }
    if (!stat_at(dfd, n, st) || !S_ISREG(st.st_mode)) {  // symlinks are not followed
      struct stat dst {};
      if (!key.empty() && stat_at(dfd, entry, dst) && S_ISDIR(dst.st_mode) && logged_empty_.size() < 1024 &&
          logged_empty_.insert(dir + "/" + std::string(entry)).second)
        log::info("session directory " + dir + "/" + std::string(entry) + " holds no " + v01_log.substr(1) +
                  ": skipped");
      return;
    }
    auto it = b.files.find(n);
    if (it != b.files.end() && it->second.size == std::uint64_t(st.st_size) && it->second.mtime_ns == mtime_ns(st)) {
      it->second.seen = gen;
      return;
    }
    const std::string file(n);
    LogSummary s = summarize_log(dir + "/" + file, enc_);
    ++files_read_;
    Entry e;
    e.size = std::uint64_t(st.st_size);
    e.mtime_ns = mtime_ns(st);
    e.seen = gen;
    // The harness's identity rule: a log whose header names another id/bucket is not that session.
    if (s.header && placed(*s.header, name, file)) {
      SessionListing row;
      row.header = std::move(*s.header);
      row.title = std::move(s.title);
      row.updatedAt = s.updatedAt;
      row.sizeBytes = e.size;
      e.row = std::move(row);
    }
    // A log that only grew keeps its place among the logs; a new, lost or replaced identity does not.
    const bool same_log = it != b.files.end() && it->second.row && e.row && it->second.row->header.id == e.row->header.id;
    b.files.insert_or_assign(file, std::move(e));
    sorted_valid_ = false;
    if (!same_log) ++logs_version_;
    dirty_ = true;
  });
  for (auto it = b.files.begin(); it != b.files.end();) {
    if (it->second.seen != gen) {
      it = b.files.erase(it);
      sorted_valid_ = false;
      ++logs_version_;
      dirty_ = true;
    } else {
      ++it;
    }
  }
  b.mtime_ns = dir_mtime;
  b.racy = scanned_at - dir_mtime < kRacyWindowNs;
}

void ListingIndex::refresh() {
  refresh_root(false);
  for (auto& [name, b] : buckets_) {
    struct stat st {};
    if (!lstat_path(root_ + "/" + name, st)) continue;
    if (b.racy || b.mtime_ns != mtime_ns(st)) sweep_bucket(name, b);
  }
}

void ListingIndex::ensure_sorted() {
  if (sorted_valid_) return;
  sorted_.clear();
  for (const auto& [bname, b] : buckets_)
    for (const auto& [fname, e] : b.files)
      if (e.row) sorted_.push_back(&*e.row);
  std::sort(sorted_.begin(), sorted_.end(), [](const SessionListing* a, const SessionListing* b) {
    if (a->header.createdAt != b->header.createdAt) return a->header.createdAt > b->header.createdAt;
    return compare_ids_en_us(a->header.id, b->header.id) < 0;
  });
  sorted_valid_ = true;
}

void ListingIndex::visit(const ListQuery& q, const std::function<bool(const SessionListing&)>& fn) {
  refresh();
  ensure_sorted();
  std::optional<std::string> want_cwd;
  if (q.cwd) want_cwd = normalize_cwd(*q.cwd);
  std::size_t emitted = 0;
  auto it = sorted_.begin();
  if (q.after) {
    // Keyset cursor: the first row strictly after (createdAt, id) in listing order.
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::int64_t at = q.after->first;
    const std::string& aid = q.after->second;
    it = std::partition_point(sorted_.begin(), sorted_.end(), [&](const SessionListing* r) {
      const auto& h = r->header;
      return h.createdAt > at || (h.createdAt == at && compare_ids_en_us(h.id, aid) <= 0);
    });
  }
  for (; it != sorted_.end() && emitted < q.limit; ++it) {
    const SessionListing& row = **it;
    const auto& cwd = row.header.cwd;
    if ((q.with_cwd_only || want_cwd) && !cwd) continue;
    if (want_cwd && normalize_cwd(*cwd) != *want_cwd) continue;
    ++emitted;
    if (!fn(row)) break;
  }
}

std::uint64_t ListingIndex::refreshed_logs_version() {
  refresh();
  return logs_version_;
}

void ListingIndex::visit_logs(
    const std::function<void(const std::string&, const std::string&, const SessionListing&)>& fn) {
  refresh();
  for (const auto& [bname, b] : buckets_)
    for (const auto& [fname, e] : b.files)
      if (e.row) fn(bname, fname, *e.row);
}

std::vector<SessionListing> ListingIndex::list(const ListQuery& q) {
  std::vector<SessionListing> out;
  visit(q, [&](const SessionListing& row) {
    out.push_back(row);
    return true;
  });
  return out;
}

void ListingIndex::record_write(const std::string& bucket, const std::string& file, const SessionHeader& header,
                                const std::optional<std::string>& title, std::int64_t updated_at, std::uint64_t size,
                                std::int64_t mtime_ns) {
  Bucket& b = buckets_[bucket];
  Entry& e = b.files[file];
  if (!e.row) {
    e.row.emplace();
    e.row->header = header;
    sorted_valid_ = false;
    ++logs_version_;
  }
  e.row->title = title;
  e.row->updatedAt = updated_at;
  e.row->sizeBytes = size;
  e.size = size;
  e.mtime_ns = mtime_ns;
  e.seen = generation_;
  dirty_ = true;
}

void ListingIndex::record_delete(const std::string& bucket, const std::string& file) {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  if (it->second.files.erase(file)) {
    sorted_valid_ = false;
    ++logs_version_;
    dirty_ = true;
  }
}

} // namespace acp::store
