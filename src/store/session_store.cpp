#include "store/session_store.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/fold.hpp"
#include "store/records.hpp"
#include "store/repair.hpp"
#include "support/log.hpp"
#include "support/paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace acp::store {

namespace json = boost::json;

namespace {

bool is_bucket_name(std::string_view n) { return n == "_no-cwd" || n.rfind("cwd-", 0) == 0; }

Encoding other(Encoding e) { return e == Encoding::zstd ? Encoding::none : Encoding::zstd; }

// ".jsonl.zstd" also ends in neither ".jsonl"; classify a name as one encoding's log, if any.
std::optional<Encoding> log_encoding_of(std::string_view name) {
  if (is_log_file_name(name, Encoding::zstd)) return Encoding::zstd;
  if (is_log_file_name(name, Encoding::none)) return Encoding::none;
  return std::nullopt;
}

} // namespace

SessionStore::SessionStore(StoreOptions options) : lock_timeout_(options.lock_timeout) {
  if (options.root.empty()) throw StoreError("session store root is empty");
  root_ = std::filesystem::absolute(options.root).lexically_normal().string();
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  std::error_code ec;
  if (!std::filesystem::exists(root_, ec)) {
    if (!support::make_dirs(root_, 0700))
      throw StoreError("cannot create session store root " + root_ + ": " + std::strerror(errno));
  }
  detect_encoding(options.encoding);
  std::string cache_file;
  if (!options.cache_dir.empty())
    cache_file = options.cache_dir + "/index-" + sha256_hex(root_).substr(0, 16) + ".json";
  index_ = std::make_unique<ListingIndex>(root_, encoding_, cache_file);
  index_->start();
}

SessionStore::~SessionStore() {
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
    if (is_bucket_name(n) && ::fstatat(dfd, std::string(n).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))  // symlinked buckets are skipped
      out.emplace_back(n);
  });
  return out;
}

void SessionStore::detect_encoding(std::optional<Encoding> requested) {
  bool seen[2] = {false, false};
  for (const auto& b : bucket_dirs())
    for_each_dir_entry(root_ + "/" + b, [&](std::string_view n, int) {
      if (auto e = log_encoding_of(n)) seen[*e == Encoding::zstd ? 0 : 1] = true;
    });
  if (seen[0] && seen[1])
    throw EncodingMismatch("incompatible artifact: session store root " + root_ + " holds both .jsonl and .jsonl.zstd logs");
  std::optional<Encoding> existing;
  if (seen[0]) existing = Encoding::zstd;
  if (seen[1]) existing = Encoding::none;
  if (existing && requested && *existing != *requested)
    throw EncodingMismatch("session store root " + root_ + " uses compression '" +
                           std::string(encoding_name(*existing)) + "', not '" +
                           std::string(encoding_name(*requested)) + "'");
  encoding_ = existing ? *existing : requested.value_or(Encoding::zstd);
}

std::string SessionStore::log_path(const SessionHeader& h) const {
  return root_ + "/" + bucket_name(h.cwd) + "/" + log_file_name(h.id, encoding_);
}

std::optional<std::string> SessionStore::find_log(const std::string& id) {
  const std::string file = log_file_name(id, encoding_);
  {
    std::lock_guard g(mu_);
    auto it = known_.find(id);
    struct stat st {};
    if (it != known_.end() && it->second.on_disk && lstat_path(it->second.path, st) && S_ISREG(st.st_mode))
      return it->second.path;
  }
  const std::string foreign = encode_segment(id) + std::string(log_suffix(other(encoding_)));
  std::vector<std::string> found;
  for (const auto& b : bucket_dirs()) {
    struct stat st {};
    std::string p = root_ + "/" + b + "/" + file;
    if (lstat_path(p, st) && S_ISREG(st.st_mode)) found.push_back(p);  // symlinked logs are ignored
    if (lstat_path(root_ + "/" + b + "/" + foreign, st))
      throw EncodingMismatch("incompatible artifact " + root_ + "/" + b + "/" + foreign + " in a '" +
                             std::string(encoding_name(encoding_)) + "' session store");
  }
  if (found.size() > 1)
    throw StoreError("duplicate JSONL session id \"" + id + "\" appears in multiple cwd buckets");
  if (found.empty()) return std::nullopt;
  return found.front();
}

void SessionStore::check_identity(const SessionHeader& h, const std::string& id, const std::string& path) const {
  if (h.id != id || log_path(h) != path)
    throw StoreCorrupt(path, 1, "session header (id \"" + h.id + "\") does not match the log's location");
}

LogSnapshot SessionStore::read_log(const std::string& id) {
  LogSnapshot snap;
  StreamResult r = read_events(id, [&](json::object&& e) { snap.events.push_back(std::move(e)); });
  snap.path = std::move(r.path);
  snap.header = std::move(r.header);
  return snap;
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

void SessionStore::remember(const KnownLog& log) {
  std::lock_guard g(mu_);
  known_[log.id] = log;
  if (log.on_disk) {
    const auto& title = log.state.title();
    index_->record_write(log.bucket, log.file, log.header,
                         title ? std::optional<std::string>(title->title) : std::nullopt,
                         log.state.count() > 0 ? log.state.last_time() : log.header.createdAt, log.size, log.mtime_ns);
  }
}

KnownLog SessionStore::load_for_write(const std::string& id, const std::string& path, UniqueFd& fd) {
  fd = open_nofollow(path, O_RDWR);
  if (!fd) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat", path, errno);
  {
    std::lock_guard g(mu_);
    auto it = known_.find(id);
    if (it != known_.end() && it->second.on_disk && it->second.path == path && it->second.ino == st.st_ino &&
        it->second.dev == st.st_dev && it->second.size == std::uint64_t(st.st_size) &&
        it->second.mtime_ns == mtime_ns(st) && !it->second.state.turn_open())
      return it->second;  // nobody wrote since our last read or write, and no turn was left open
    // A turn left open by a writer of this process that gave up (exception, destroyed writer)
    // is repaired like one left by a dead process: rescan below.
  }
  ScanResult scan = scan_log(fd.get(), path, encoding_);
  check_identity(scan.header, id, path);
  KnownLog log;
  log.id = id;
  log.path = path;
  log.file = path.substr(path.rfind('/') + 1);
  std::string dir = path.substr(0, path.rfind('/'));
  log.bucket = dir.substr(dir.rfind('/') + 1);
  log.header = scan.header;
  log.on_disk = true;
  log.ino = st.st_ino;
  log.dev = st.st_dev;

  // Repair only under the lock (we hold it) and only because the tail is still torn or a turn
  // was left open by a writer that died.
  log.state = needs_repair(scan) ? repair_log(fd.get(), path, encoding_, scan) : std::move(scan.state);
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat", path, errno);
  log.size = std::uint64_t(st.st_size);
  log.mtime_ns = mtime_ns(st);
  return log;
}

SessionWriter SessionStore::open(const std::string& id) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  std::string dir = path->substr(0, path->rfind('/'));
  SessionLock lock = SessionLock::acquire(dir + "/" + lock_file_name(id), lock_timeout_, id);
  UniqueFd fd;
  KnownLog log = load_for_write(id, *path, fd);
  remember(log);
  return SessionWriter(*this, std::move(lock), std::move(log), std::move(fd));
}

SessionWriter SessionStore::create(const SessionHeader& header) {
  if (header.cwd && !support::is_absolute_path(*header.cwd))
    throw StoreError("session cwd must be an absolute path: " + *header.cwd);
  const std::string path = log_path(header);  // validates the id and its length
  const std::string bucket = bucket_name(header.cwd);
  const std::string dir = root_ + "/" + bucket;
  ensure_root();
  if (ensure_private_dir(dir)) fsync_dir(root_);
  SessionLock lock = SessionLock::acquire(dir + "/" + lock_file_name(header.id), lock_timeout_, header.id);
  if (find_log(header.id)) throw SessionExists(header.id);
  KnownLog log;
  log.id = header.id;
  log.bucket = bucket;
  log.file = path.substr(path.rfind('/') + 1);
  log.path = path;
  log.header = header;
  log.header.version = kSessionFormatVersion;
  return SessionWriter(*this, std::move(lock), std::move(log), UniqueFd());
}

SessionWriter SessionStore::open_or_create(const SessionHeader& header) {
  if (find_log(header.id)) return open(header.id);
  return create(header);
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

void SessionStore::delete_session(const std::string& id) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  std::string dir = path->substr(0, path->rfind('/'));
  std::string lock_path = dir + "/" + lock_file_name(id);
  SessionLock lock = SessionLock::acquire(lock_path, lock_timeout_, id);
  if (::unlink(path->c_str()) != 0) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("unlink", *path, errno);
  }
  fsync_dir(dir);
  // Unlinked while held: a waiter that locked the old inode notices and retries (SessionLock).
  ::unlink(lock_path.c_str());
  std::lock_guard g(mu_);
  known_.erase(id);
  index_->record_delete(dir.substr(dir.rfind('/') + 1), path->substr(path->rfind('/') + 1));
}

} // namespace acp::store
