#include "store/listing_index.hpp"

#include "protocol/json_text.hpp"
#include "store/collation.hpp"
#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/log_summary.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <unordered_set>

namespace acp::store {

namespace json = boost::json;

namespace {

constexpr std::int64_t kRacyWindowNs = 100'000'000;

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool is_bucket_name(std::string_view n) { return n == "_no-cwd" || n.rfind("cwd-", 0) == 0; }

// Names in a directory; empty when it vanished.
std::vector<std::string> read_dir(const std::string& dir) {
  std::vector<std::string> out;
  UniqueFd fd = open_nofollow(dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return out;
  DIR* d = ::fdopendir(fd.release());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

} // namespace

ListingIndex::ListingIndex(std::string root, Encoding enc, std::string cache_file)
    : root_(std::move(root)), enc_(enc), cache_file_(std::move(cache_file)) {}

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
  boost::system::error_code ec;
  json::value v = protocol::parse_json(text, ec);
  // Anything unexpected means "no cache": the sweep below rebuilds whatever is missing.
  try {
    if (ec || !v.is_object()) return;
    const auto& o = v.get_object();
    if (o.at("version") != 1 || o.at("root") != json::value(root_) ||
        o.at("encoding") != json::value(std::string(encoding_name(enc_))))
      return;
    std::map<std::string, Bucket> loaded;
    for (const auto& [bname, bv] : o.at("buckets").as_object()) {
      Bucket& b = loaded[std::string(bname)];
      for (const auto& [fname, fv] : bv.as_object()) {
        const auto& f = fv.as_object();
        Entry e;
        e.size = f.at("size").to_number<std::uint64_t>();
        e.mtime_ns = f.at("mtime").to_number<std::int64_t>();
        e.updated_at = f.at("updatedAt").to_number<std::int64_t>();
        if (f.at("header").is_object()) {
          e.header = parse_header(f.at("header"));
          if (!e.header) return;
        }
        if (f.at("title").is_string()) e.title = std::string(f.at("title").get_string());
        b.files.emplace(std::string(fname), std::move(e));
      }
    }
    buckets_ = std::move(loaded);
    sorted_valid_ = false;
  } catch (const std::exception&) {
    buckets_.clear();
  }
}

void ListingIndex::save() {
  if (!dirty_ || cache_file_.empty()) return;
  json::object buckets;
  for (const auto& [bname, b] : buckets_) {
    json::object files;
    for (const auto& [fname, e] : b.files) {
      json::object f;
      f["size"] = e.size;
      f["mtime"] = e.mtime_ns;
      f["updatedAt"] = e.updated_at;
      f["header"] = e.header ? json::value(header_record(*e.header)) : json::value(nullptr);
      f["title"] = e.title ? json::value(*e.title) : json::value(nullptr);
      files[fname] = std::move(f);
    }
    buckets[bname] = std::move(files);
  }
  json::object o;
  o["version"] = 1;
  o["root"] = root_;
  o["encoding"] = encoding_name(enc_);
  o["buckets"] = std::move(buckets);
  std::string text = protocol::to_json_text(o);
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
    dirty_ = false;
  } catch (const StoreError&) {
    // The index is a cache: failing to persist it only costs a slower next start.
  }
}

void ListingIndex::refresh_root(bool force) {
  struct stat st {};
  if (!lstat_path(root_, st)) {
    if (!buckets_.empty()) {
      buckets_.clear();
      sorted_valid_ = false;
      dirty_ = true;
    }
    return;
  }
  const std::int64_t m = mtime_ns(st);
  if (!force && !root_racy_ && m == root_mtime_ns_) return;
  const std::int64_t scanned_at = realtime_ns();
  std::vector<std::string> present;
  for (auto& n : read_dir(root_)) {
    struct stat bst {};
    if (!is_bucket_name(n) || !lstat_path(root_ + "/" + n, bst) || !S_ISDIR(bst.st_mode)) continue;  // symlinks skipped
    present.push_back(n);
    buckets_.try_emplace(n);
  }
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (std::find(present.begin(), present.end(), it->first) == present.end()) {
      it = buckets_.erase(it);
      sorted_valid_ = false;
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
  std::unordered_set<std::string> seen;
  for (auto& n : read_dir(dir)) {
    if (!is_log_file_name(n, enc_)) continue;
    struct stat st {};
    if (!lstat_path(dir + "/" + n, st) || !S_ISREG(st.st_mode)) continue;  // symlinks are not followed
    seen.insert(n);
    auto it = b.files.find(n);
    if (it != b.files.end() && it->second.size == std::uint64_t(st.st_size) && it->second.mtime_ns == mtime_ns(st))
      continue;
    LogSummary s = summarize_log(dir + "/" + n, enc_);
    ++files_read_;
    Entry e;
    e.header = std::move(s.header);
    // The harness's identity rule: a log whose header names another id/bucket is not that session.
    if (e.header && (bucket_name(e.header->cwd) != name || encode_segment(e.header->id) + std::string(log_suffix(enc_)) != n))
      e.header.reset();
    e.title = std::move(s.title);
    e.updated_at = s.updatedAt;
    e.size = std::uint64_t(st.st_size);
    e.mtime_ns = mtime_ns(st);
    b.files[n] = std::move(e);
    sorted_valid_ = false;
    dirty_ = true;
  }
  for (auto it = b.files.begin(); it != b.files.end();) {
    if (!seen.count(it->first)) {
      it = b.files.erase(it);
      sorted_valid_ = false;
      dirty_ = true;
    } else {
      ++it;
    }
  }
  b.mtime_ns = dir_mtime;
  b.racy = scanned_at - dir_mtime < kRacyWindowNs;
}

void ListingIndex::ensure_sorted() {
  if (sorted_valid_) return;
  sorted_.clear();
  for (const auto& [bname, b] : buckets_)
    for (const auto& [fname, e] : b.files)
      if (e.header) sorted_.emplace_back(&e, bname);
  std::sort(sorted_.begin(), sorted_.end(), [](const auto& a, const auto& b) {
    const auto& ha = *a.first->header;
    const auto& hb = *b.first->header;
    if (ha.createdAt != hb.createdAt) return ha.createdAt > hb.createdAt;
    return compare_ids_en_us(ha.id, hb.id) < 0;
  });
  sorted_valid_ = true;
}

std::vector<SessionListing> ListingIndex::list(const ListQuery& q) {
  refresh_root(false);
  for (auto& [name, b] : buckets_) {
    struct stat st {};
    if (!lstat_path(root_ + "/" + name, st)) continue;
    if (b.racy || b.mtime_ns != mtime_ns(st)) sweep_bucket(name, b);
  }
  ensure_sorted();
  std::optional<std::string> want_cwd;
  if (q.cwd) want_cwd = normalize_cwd(*q.cwd);
  std::vector<SessionListing> out;
  for (const auto& [e, bucket] : sorted_) {
    if (out.size() >= q.limit) break;
    const SessionHeader& h = *e->header;
    if ((q.with_cwd_only || want_cwd) && !h.cwd) continue;
    if (want_cwd && normalize_cwd(*h.cwd) != *want_cwd) continue;
    if (q.after) {
      const auto& [at, aid] = *q.after;
      bool after = h.createdAt < at || (h.createdAt == at && compare_ids_en_us(h.id, aid) > 0);
      if (!after) continue;
    }
    SessionListing l;
    l.header = h;
    l.title = e->title;
    l.updatedAt = e->updated_at;
    l.sizeBytes = e->size;
    out.push_back(std::move(l));
  }
  save();
  return out;
}

void ListingIndex::record_write(const std::string& bucket, const std::string& file, const SessionHeader& header,
                                const std::optional<std::string>& title, std::int64_t updated_at, std::uint64_t size,
                                std::int64_t mtime_ns) {
  Bucket& b = buckets_[bucket];
  Entry& e = b.files[file];
  if (!e.header || e.header->createdAt != header.createdAt || e.header->id != header.id) sorted_valid_ = false;
  e.header = header;
  e.title = title;
  e.updated_at = updated_at;
  e.size = size;
  e.mtime_ns = mtime_ns;
  dirty_ = true;
}

void ListingIndex::record_delete(const std::string& bucket, const std::string& file) {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return;
  if (it->second.files.erase(file)) {
    sorted_valid_ = false;
    dirty_ = true;
  }
}

} // namespace acp::store
