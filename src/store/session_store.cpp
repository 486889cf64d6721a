#include "store/session_store.hpp"

#include "store/file_appender.hpp"

#include "store/content_index.hpp"
#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/fold.hpp"
#include "store/records.hpp"
#include "store/repair.hpp"
#include "support/log.hpp"
#include "support/file_io.hpp"
#include "support/paths.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace acp::store {

namespace json = boost::json;

namespace {

Encoding other(Encoding e) { return e == Encoding::zstd ? Encoding::none : Encoding::zstd; }

// ".jsonl.zstd" also ends in neither ".jsonl"; classify a name as one encoding's log, if any.
std::optional<Encoding> log_encoding_of(std::string_view name) {
  if (is_log_file_name(name, Encoding::zstd)) return Encoding::zstd;
  if (is_log_file_name(name, Encoding::none)) return Encoding::none;
  return std::nullopt;
}

std::string absolute_root(const std::string& root) {
  std::string r = std::filesystem::absolute(root).lexically_normal().string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r;
}

} // namespace

FileStamp file_stamp(const struct stat& st) {
  return {std::uint64_t(st.st_size), mtime_ns(st), std::uint64_t(st.st_ino), std::uint64_t(st.st_dev)};
}

std::pair<std::string, std::string> SessionStore::index_key(const std::string& path) const {
  const std::string rel = path.substr(root_.size() + 1);
  const std::size_t slash = rel.find('/');
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

SessionStore::SessionStore(StoreOptions options) : lock_timeout_(options.lock_timeout) {
  if (options.root.empty()) throw StoreError("session store root is empty");
  root_ = absolute_root(options.root);
  std::error_code ec;
  read_only_ = options.read_only;
  if (!std::filesystem::exists(root_, ec) && !read_only_) {
    if (!support::make_dirs(root_, 0700))
      throw StoreError("cannot create session store root " + root_ + ": " + std::strerror(errno));
  }
  detect_layout(options);
  std::string cache_file;
  if (!options.cache_dir.empty())
    cache_file = options.cache_dir + "/index-" + sha256_hex(root_ + "\n" + std::string(generation_name(generation_)))
                                                     .substr(0, 16) + ".json";
  index_ = std::make_unique<ListingIndex>(root_, encoding_, generation_, cache_file);
  index_->start();
  // Named like the listing's cache file; opened only when content is first searched or indexed,
  // so a start-up never pays for it.
  if (!options.cache_dir.empty())
    content_file_ = options.cache_dir + "/content-" +
                    sha256_hex(root_ + "\n" + std::string(generation_name(generation_))).substr(0, 16) + ".sqlite";
}

SessionStore::~SessionStore() {
  content_live_ = nullptr;
  content_.reset();
  try {
    std::lock_guard g(mu_);
    index_->save();
  } catch (...) {
  }
}

std::vector<std::string> SessionStore::bucket_dirs() const {
  std::vector<std::string> out;
  for_each_dir_entry(root_, [&](std::string_view n, int dfd) {
    struct stat st {};
    // 0.1: every directory of the root is a project directory (docs/store-format.md#project-layout-01).
    if (is_bucket_dir_name(generation_, n) &&
        ::fstatat(dfd, std::string(n).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
      out.emplace_back(n);  // symlinked buckets are skipped
  });
  return out;
}

namespace {

struct DetectedLayout {
  Encoding encoding;
  Generation generation;
  std::string flat_log;  ///< a flat log, when the root holds any
};

// The entry's type: readdir's when it gave one, else lstat's. Symlinks are never followed.
mode_t entry_type(int dfd, std::string_view name, unsigned char d_type) {
  switch (d_type) {
    case DT_REG: return S_IFREG;
    case DT_DIR: return S_IFDIR;
    case DT_UNKNOWN: break;
    default: return 0;  // symlinks, sockets, …: neither a log nor a directory of logs
  }
  struct stat st {};
  if (::fstatat(dfd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return st.st_mode & S_IFMT;
}

// A regular file at `rel` below the directory `dfd` (no symlink followed at its last component).
bool regular_file_at(int dfd, const std::string& rel, const std::string& dir) {
  struct stat st {};
  if (::fstatat(dfd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return S_ISREG(st.st_mode);
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw_errno("stat", dir + "/" + rel, errno);
}

DetectedLayout detect_layout_of(const std::string& root_, const StoreOptions& options) {
  // What the root holds: flat logs (45fc) and session directories (0.1), of either encoding. The
  // first file of each kind is kept to name it in an error. The walk costs one stat per session
  // directory and none per flat log (readdir's d_type): once an encoding has been seen, only the
  // other one is looked for, since further logs of a known encoding change nothing.
  std::string flat_log, dir_log, by_encoding[2];
  for_each_dir_entry_typed(root_, [&](std::string_view b, int rootfd, unsigned char btype) {
    if (entry_type(rootfd, b, btype) != S_IFDIR) return;
    const std::string bdir = root_ + "/" + std::string(b);
    for_each_dir_entry_typed(bdir, [&](std::string_view n, int bfd, unsigned char type) {
      const mode_t kind = entry_type(bfd, n, type);
      if (kind == S_IFREG) {
        if (auto e = log_encoding_of(n)) {
          const std::string path = bdir + "/" + std::string(n);
          if (flat_log.empty()) flat_log = path;
          if (by_encoding[*e == Encoding::zstd ? 0 : 1].empty()) by_encoding[*e == Encoding::zstd ? 0 : 1] = path;
        }
      } else if (kind == S_IFDIR) {
        for (Encoding e : {Encoding::zstd, Encoding::none}) {
          std::string& first = by_encoding[e == Encoding::zstd ? 0 : 1];
          if (!first.empty() && !dir_log.empty()) continue;  // known already: nothing new to learn
          const std::string rel = std::string(n) + "/" + v01_log_name(e);
          if (!regular_file_at(bfd, rel, bdir)) continue;
          const std::string log = bdir + "/" + rel;
          if (dir_log.empty()) dir_log = log;
          if (first.empty()) first = log;
        }
      }
    });
  });
  if (!by_encoding[0].empty() && !by_encoding[1].empty())
    throw EncodingMismatch("incompatible artifact: session store root " + root_ + " holds both encodings: " +
                           by_encoding[0] + " and " + by_encoding[1]);
  std::optional<Encoding> existing;
  if (!by_encoding[0].empty()) existing = Encoding::zstd;
  if (!by_encoding[1].empty()) existing = Encoding::none;
  if (existing && options.encoding && *existing != *options.encoding)
    throw EncodingMismatch("session store root " + root_ + " uses compression '" +
                           std::string(encoding_name(*existing)) + "', not '" +
                           std::string(encoding_name(*options.encoding)) + "'");
  DetectedLayout out;
  out.encoding = existing ? *existing : options.encoding.value_or(Encoding::zstd);

  std::optional<Generation> held;
  if (!dir_log.empty()) held = Generation::project_dirs;
  else if (!flat_log.empty()) held = Generation::flat;
  // The requested generation is for roots that hold no log yet: a root keeps what it holds, so one
  // --store-generation works beside roots of both generations (issue 15).
  out.generation = held ? *held : options.generation.value_or(options.default_generation);
  out.flat_log = flat_log;
  return out;
}

} // namespace

void SessionStore::check_root(const StoreOptions& options) {
  if (options.root.empty()) throw StoreError("session store root is empty");
  detect_layout_of(absolute_root(options.root), options);
}

void SessionStore::detect_layout(const StoreOptions& options) {
  DetectedLayout d = detect_layout_of(root_, options);
  encoding_ = d.encoding;
  generation_ = d.generation;
  const std::string& flat_log = d.flat_log;
  if (options.generation && *options.generation != generation_)
    log::info("session store root " + root_ + " holds harness " + std::string(generation_name(generation_)) +
              " logs: it keeps that layout (--store-generation " + std::string(generation_name(*options.generation)) +
              " is for new roots)");
  if (generation_ == Generation::project_dirs && !flat_log.empty())
    log::warn("session store root " + root_ + " uses the harness 0.1 layout but holds flat logs (" + flat_log +
              "): they are listed and read, never written");
}

std::string SessionStore::log_path(const SessionHeader& h) const {
  return root_ + "/" + bucket_of(generation_, h.cwd) + "/" + log_entry_name(generation_, h.id, encoding_);
}

std::string SessionStore::read_only_reason(const std::string& path) const {
  if (read_only_) return "its store root " + root_ + " is read-only (pass it with --store to write it)";
  if (generation_ == Generation::project_dirs && path.size() > root_.size() &&
      path.find('/', root_.size() + 1) == path.rfind('/'))
    return "it is a flat-layout log inside the harness 0.1 root " + root_ + ", which 0.1.1 refuses to share";
  return {};
}

std::string SessionStore::lock_path_of(const std::string& path, const std::string& id) const {
  const std::string dir = path.substr(0, path.rfind('/'));
  if (generation_ == Generation::project_dirs) return dir + "/" + std::string(kV01LockName);
  return dir + "/" + lock_file_name(id);
}

void SessionStore::ensure_log_dirs(const std::string& path) {
  ensure_root();
  // root/bucket (45fc) or root/project/session (0.1): each new level is fsynced in its parent.
  std::string dir = root_;
  std::size_t at = root_.size() + 1;
  for (std::size_t slash; (slash = path.find('/', at)) != std::string::npos; at = slash + 1) {
    std::string next = path.substr(0, slash);
    if (ensure_private_dir(next)) fsync_dir(dir);
    dir = std::move(next);
  }
}

std::optional<std::string> SessionStore::find_log(const std::string& id) {
  const std::string entry = log_entry_name(generation_, id, encoding_);
  {
    std::lock_guard g(mu_);
    auto it = known_.find(id);
    struct stat st {};
    if (it != known_.end() && it->second.log.on_disk && lstat_path(it->second.log.path, st) && S_ISREG(st.st_mode))
      return it->second.log.path;
  }
  const std::string seg = encode_segment(id);
  const std::string foreign_flat = seg + std::string(log_suffix(other(encoding_)));
  const std::string own_flat = seg + std::string(log_suffix(encoding_));
  std::vector<std::string> found;
  for (const auto& b : bucket_dirs()) {
    struct stat st {};
    const std::string base = root_ + "/" + b + "/";
    if (lstat_path(base + entry, st) && S_ISREG(st.st_mode)) found.push_back(base + entry);  // symlinks ignored
    if (generation_ == Generation::project_dirs) {
      // A flat log somebody left in a 0.1 root is still that session, read-only.
      if (lstat_path(base + own_flat, st) && S_ISREG(st.st_mode)) found.push_back(base + own_flat);
      const std::string foreign = base + seg + "/" + v01_log_name(other(encoding_));
      if (lstat_path(foreign, st))
        throw EncodingMismatch("incompatible artifact " + foreign + " in a '" +
                               std::string(encoding_name(encoding_)) + "' session store");
    }
    if (lstat_path(base + foreign_flat, st))
      throw EncodingMismatch("incompatible artifact " + base + foreign_flat + " in a '" +
                             std::string(encoding_name(encoding_)) + "' session store");
  }
  if (found.size() > 1)
    throw StoreError("duplicate JSONL session id \"" + id + "\" appears in multiple " +
                     (generation_ == Generation::flat ? "cwd buckets" : "project directories"));
  if (found.empty()) return std::nullopt;
  return found.front();
}

void SessionStore::check_identity(const SessionHeader& h, const std::string& id, const std::string& path) const {
  bool placed = log_path(h) == path;
  // A flat log inside a 0.1 root: its file name is the only place its id is spelled out.
  if (!placed && generation_ == Generation::project_dirs)
    placed = path.size() > root_.size() && path.substr(path.rfind('/') + 1) == log_file_name(h.id, encoding_);
  if (h.id != id || !placed)
    throw StoreCorrupt(path, 1, "session header (id \"" + h.id + "\") does not match the log's location");
}

StreamResult SessionStore::read_events(const std::string& id, const EventSink& sink, std::stop_token stop,
                                       EventLifetime lifetime) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  UniqueFd fd = open_nofollow(*path, O_RDONLY);
  if (!fd) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("open", *path, errno);
  }
  ScanResult scan = scan_log(
      fd.get(), *path, encoding_, [&](json::object&& e) {
        if (sink) sink(std::move(e));
      },
      std::move(stop), lifetime);
  check_identity(scan.header, id, *path);
  StreamResult r;
  r.path = *path;
  r.header = std::move(scan.header);
  if (scan.state.count() > 0) r.capturedThroughSeq = scan.state.count() - 1;
  return r;
}

SurfaceSnapshot SessionStore::read_surface(const std::string& id) {
  LogSnapshot log = read_log(id);
  std::vector<std::int64_t> nodes = fold_surface(log.events);
  SurfaceSnapshot s;
  s.session = std::move(log.header);
  if (!log.events.empty()) s.capturedThroughSeq = std::int64_t(log.events.size()) - 1;
  s.events.reserve(nodes.size());
  for (auto seq : nodes) s.events.push_back(log.events[std::size_t(seq)]);
  return s;
}

std::optional<TitleInfo> SessionStore::read_title(const std::string& id) {
  LogState state;
  read_events(id, [&](json::object&& e) { state.observe(e); });
  return state.title();
}

std::vector<SessionListing> SessionStore::list_sessions(const ListQuery& query) {
  std::vector<SessionListing> rows;
  std::optional<std::string> text;
  std::uint64_t generation = 0;
  {
    std::lock_guard g(mu_);
    rows = index_->list(query);
    text = index_->take_dirty_text();
    generation = ++index_generation_;
  }
  if (text) persist_index(*text, generation);
  return rows;
}

bool SessionStore::has_session_other_than(const std::string& id) {
  // Not list_sessions: a listing also writes the index cache when a session was added, which on
  // the first prompt of every new session meant serialising every row of a large root.
  bool found = false;
  ListQuery query;
  query.limit = 2;
  std::lock_guard g(mu_);
  index_->visit(query, [&](const SessionListing& row) {
    found = found || row.header.id != id;
    return !found;
  });
  return found;
}

void SessionStore::visit_sessions(const ListQuery& query, const std::function<bool(const SessionListing&)>& fn) {
  std::optional<std::string> text;
  std::uint64_t generation = 0;
  {
    std::lock_guard g(mu_);
    index_->visit(query, fn);
    text = index_->take_dirty_text();
    generation = ++index_generation_;
  }
  if (text) persist_index(*text, generation);
}

void SessionStore::persist_index(const std::string& text, std::uint64_t generation) {
  // Outside mu_: listings and writers go on while the file is written; an older text never
  // replaces a newer one.
  std::lock_guard g(persist_mu_);
  if (generation <= persisted_generation_) return;
  index_->write_cache(text);
  persisted_generation_ = generation;
}

void SessionStore::rebuild_index() {
  std::lock_guard g(mu_);
  index_->rebuild();
}

void SessionStore::flush_index() {
  std::lock_guard g(mu_);
  index_->save();
}

std::uint64_t SessionStore::index_files_read() {
  std::lock_guard g(mu_);
  return index_->files_read();
}

ContentIndex* SessionStore::content_index() {
  if (ContentIndex* live = content_live_.load()) return live;
  if (content_file_.empty()) return nullptr;
  std::lock_guard g(content_mu_);
  if (!content_) {
    content_ = std::make_unique<ContentIndex>(
        content_file_, root_ + "\n" + std::string(generation_name(generation_)) + "\n" +
                           std::string(encoding_name(encoding_)),
        encoding_);
    content_live_ = content_.get();
  }
  return content_.get();
}

ContentListing SessionStore::content_logs() {
  ContentListing listing;
  std::optional<std::string> text;
  std::uint64_t generation = 0;
  {
    std::lock_guard g(mu_);
    listing.version = index_->refreshed_logs_version();
    if (!content_logs_ || content_logs_version_ != listing.version) {
      auto logs = std::make_shared<std::vector<ContentLog>>();
      index_->visit_logs([&](const std::string& bucket, const std::string& file, const SessionListing& row) {
        logs->push_back({row.header.id, root_ + "/" + bucket + "/" + file});
      });
      content_logs_ = std::move(logs);
      content_logs_version_ = listing.version;
    }
    listing.logs = content_logs_;
    text = index_->take_dirty_text();
    generation = ++index_generation_;
  }
  if (text) persist_index(*text, generation);
  return listing;
}

std::vector<ContentHit> SessionStore::search_content(const ContentQuery& query, std::stop_token stop) {
  if (content_terms(query.words).empty() || query.limit == 0) return {};
  try {
    if (ContentIndex* index = content_index()) {
      index->catch_up(content_logs(), {}, stop, false);
      return index->search(query, stop);
    }
  } catch (const ReadCancelled&) {
    throw;
  } catch (const StoreError& e) {
    // The index is a cache: without it the answer is slower, never different.
    log::warn(std::string(e.what()) + "; searching " + root_ + " without it");
  }
  return Backend::search_content(query, stop);
}

IndexProgress SessionStore::index_content(const IndexProgressFn& progress, std::stop_token stop) {
  ContentIndex* index = content_index();
  if (!index) return Backend::index_content(progress, stop);
  return index->catch_up(content_logs(), progress, stop, true);
}

void SessionStore::remember(const KnownLog& log, const FileStamp& stamp) {
  std::lock_guard g(mu_);
  known_[log.id] = FileLog{log, stamp};
  if (log.on_disk) {
    const auto& title = log.state.title();
    const auto [bucket, file] = index_key(log.path);
    index_->record_write(bucket, file, log.header, title ? std::optional<std::string>(title->title) : std::nullopt,
                         log.state.count() > 0 ? log.state.last_time() : log.header.createdAt, stamp.size,
                         stamp.mtime_ns);
  }
}

std::optional<SessionStore::FileLog> SessionStore::cached(const std::string& id, const std::string& path,
                                                          const FileStamp& now) {
  std::lock_guard g(mu_);
  auto it = known_.find(id);
  if (it == known_.end() || !it->second.log.on_disk || it->second.log.path != path || it->second.stamp != now)
    return std::nullopt;
  return it->second;
}

SessionStore::FileLog SessionStore::load_for_write(const std::string& id, const std::string& path, UniqueFd& fd) {
  fd = open_nofollow(path, O_RDWR);
  if (!fd) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat", path, errno);
  // Nobody wrote since our last read or write, and no turn was left open. A turn left open by a
  // writer of this process that gave up (exception, destroyed writer) is repaired like one left by
  // a dead process: rescan below.
  if (auto known = cached(id, path, file_stamp(st)); known && !known->log.state.turn_open()) return std::move(*known);
  ScanResult scan = scan_log(fd.get(), path, encoding_);
  check_identity(scan.header, id, path);
  FileLog f;
  f.log = published_log(id, path, scan.header);

  // Repair only under the lock (we hold it) and only because the tail is still torn or a turn
  // was left open by a writer that died.
  f.log.state = needs_repair(scan) ? repair_log(fd.get(), path, encoding_, generation_, scan) : std::move(scan.state);
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat", path, errno);
  f.stamp = file_stamp(st);
  return f;
}

SessionWriter SessionStore::open(const std::string& id, const LockWait& wait) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  if (auto why = read_only_reason(*path); !why.empty()) throw SessionReadOnly(id, why);
  SessionLock lock = SessionLock::acquire(lock_path_of(*path, id), lock_timeout_, id, wait);
  UniqueFd fd;
  FileLog f = load_for_write(id, *path, fd);
  remember(f.log, f.stamp);
  return SessionWriter(generation_, std::move(f.log),
                       std::make_unique<FileAppender>(*this, std::move(lock), std::move(fd), f.stamp));
}

SessionWriter SessionStore::create(const SessionHeader& header, const LockWait& wait) {
  if (header.cwd && !support::is_absolute_path(*header.cwd))
    throw StoreError("session cwd must be an absolute path: " + *header.cwd);
  if (read_only_) throw SessionReadOnly(header.id, read_only_reason(root_ + "/"));
  if (generation_ == Generation::project_dirs && header.cwd && header.cwd->empty())
    throw StoreError("session cwd must not be empty in a harness 0.1 store");
  const std::string path = log_path(header);  // validates the id and its length
  // The lock lives in the log's directory (the 0.1 session directory), created now.
  ensure_log_dirs(path);
  SessionLock lock = SessionLock::acquire(lock_path_of(path, header.id), lock_timeout_, header.id, wait);
  if (find_log(header.id)) throw SessionExists(header.id);
  KnownLog log;
  log.id = header.id;
  log.path = path;
  log.header = header;
  log.header.version = kSessionFormatVersion;
  return SessionWriter(generation_, std::move(log), std::make_unique<FileAppender>(*this, std::move(lock), UniqueFd()));
}

void SessionStore::ensure_root() {
  struct stat st {};
  if (::lstat(root_.c_str(), &st) == 0) return;
  if (errno != ENOENT) throw_errno("stat", root_, errno);
  if (!support::make_dirs(root_, 0700)) throw_errno("mkdir", root_, errno);
  log::warn("session store root " + root_ + " had been removed: created it again");
  std::string parent = root_.substr(0, root_.rfind('/'));
  fsync_dir(parent.empty() ? "/" : parent);
}

void SessionStore::delete_session(const std::string& id, const LockWait& wait) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  if (auto why = read_only_reason(*path); !why.empty()) throw SessionReadOnly(id, why);
  std::string dir = path->substr(0, path->rfind('/'));
  std::string lock_path = lock_path_of(*path, id);
  SessionLock lock = SessionLock::acquire(lock_path, lock_timeout_, id, wait);
  if (::unlink(path->c_str()) != 0) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("unlink", *path, errno);
  }
  fsync_dir(dir);
  // Unlinked while held: a waiter that locked the old inode notices and retries (SessionLock).
  ::unlink(lock_path.c_str());
  if (generation_ == Generation::project_dirs && ::rmdir(dir.c_str()) == 0)  // left when it holds anything else
    fsync_dir(dir.substr(0, dir.rfind('/')));
  const auto [bucket, file] = index_key(*path);
  std::lock_guard g(mu_);
  known_.erase(id);
  index_->record_delete(bucket, file);
}

} // namespace acp::store
