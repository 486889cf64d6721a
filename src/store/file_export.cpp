// The file backend's side of `dsh-acp store copy`: a log's lines out verbatim, and verbatim lines
// appended to a log, so a session copied out of a root and back is byte-identical (a zstd root:
// the same plaintext; frames are cut per batch).
#include "store/session_store.hpp"

#include "store/chunk_rows.hpp"
#include "store/errors.hpp"
#include "store/event_model.hpp"
#include "store/file_appender.hpp"
#include "store/file_io.hpp"
#include "store/import_check.hpp"
#include "store/line_text.hpp"
#include "store/log_source.hpp"
#include "store/records.hpp"
#include "support/json_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace acp::store {

namespace json = boost::json;

namespace {

// Thrown through read_log_lines once every committed line was delivered.
struct ExportDone {};

// The events a storage line stands for (a packed row: several), or nullopt when it is no record.
// A line that is not valid UTF-8 is read as the scan reads it: `repaired` gets that text.
std::optional<std::vector<json::object>> line_events(std::string_view text, std::string* repaired = nullptr) {
  boost::system::error_code ec;
  json::value v = parse_stored_line(text, ec, nullptr, repaired);
  if (ec) return std::nullopt;
  std::vector<json::object> events;
  if (decode_storage_line(std::move(v), events) == LineDecode::malformed || events.empty()) return std::nullopt;
  return events;
}

constexpr const char* kReplacedText = "not valid UTF-8: read with U+FFFD in place of the bad bytes";

std::string gen(Generation g) { return std::string(generation_name(g)); }

} // namespace

Generation SessionStore::export_lines(const std::string& id, const std::function<void(std::string_view)>& header,
                                      const std::function<void(std::string_view)>& line, std::int64_t from_seq) {
  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  const bool flat_in_v01 = generation_ == Generation::project_dirs &&
                           path->find('/', root_.size() + 1) == path->rfind('/');
  if (flat_in_v01)
    throw StoreError("session \"" + id + "\" is a 45fc log left in the 0.1 root " + root_ +
                     ": its lines are not in the root's shape; copy it from a 45fc root");
  UniqueFd fd = open_nofollow(*path, O_RDONLY);
  if (!fd) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("open", *path, errno);
  }
  // The scan decides which events are committed (a torn tail or a damaged final turn is not);
  // the second walk hands out those lines as they are.
  ScanResult scan = scan_log(fd.get(), *path, encoding_, {}, {}, EventLifetime::transient);
  check_identity(scan.header, id, *path);
  const std::int64_t count = scan.state.count();
  std::int64_t next = 0;
  try {
    read_log_lines(fd.get(), *path, encoding_, [&](const PlainLine& l) {
      if (l.number == 1) {
        if (header) {
          boost::system::error_code ec;
          std::string repaired;
          parse_stored_line(l.text, ec, nullptr, &repaired);
          header(repaired.empty() ? l.text : std::string_view(repaired));
        }
        if (from_seq >= count) {  // nothing to hand out: no need to walk the lines
          next = count;
          throw ExportDone{};
        }
        return;
      }
      if (next >= count) throw ExportDone{};
      // A line an older release wrote with raw bytes goes out as every reader reads it: no writer
      // takes it as it is.
      std::string repaired;
      auto events = line_events(l.text, &repaired);
      const json::value* sv = events ? events->front().if_contains("seq") : nullptr;
      auto seq = sv ? safe_int(*sv) : std::nullopt;
      if (!seq || *seq != next)
        throw StoreCorrupt(*path, l.number, "changed while it was exported (expected seq " + std::to_string(next) + ")");
      const auto n = std::int64_t(events->size());
      if (next >= from_seq) {
        if (line) line(repaired.empty() ? l.text : std::string_view(repaired));
      } else if (next + n > from_seq) {
        throw StoreError("session \"" + id + "\": seq " + std::to_string(from_seq) +
                         " falls inside a packed chunk row (seqs " + std::to_string(next) + ".." +
                         std::to_string(next + n - 1) + "); lines cannot be split");
      }
      next += n;
    });
  } catch (const ExportDone&) {
  }
  if (next < count) throw StoreCorrupt(*path, 0, "changed while it was exported (fewer events than scanned)");
  return generation_;
}

std::vector<std::string> SessionStore::log_paths() const {
  std::vector<std::string> out;
  for (const auto& b : bucket_dirs()) {
    const std::string dir = root_ + "/" + b;
    for_each_dir_entry(dir, [&](std::string_view n, int dfd) {
      struct stat st {};
      const std::string name(n);
      if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
      if (S_ISREG(st.st_mode) && is_log_file_name(n, encoding_)) {
        out.push_back(dir + "/" + name);  // a 45fc log, or a flat one left in a 0.1 root
      } else if (S_ISDIR(st.st_mode) && generation_ == Generation::project_dirs) {
        const std::string rel = name + "/" + v01_log_name(encoding_);
        if (::fstatat(dfd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
          out.push_back(dir + "/" + rel);
      }
    });
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string SessionStore::check_log_file(const std::string& path,
                                         const std::function<void(std::int64_t, const std::string&)>& problem) {
  UniqueFd fd = open_nofollow(path, O_RDONLY);
  if (!fd) throw_errno("open", path, errno);
  std::string id;
  std::int64_t expect = 0;
  SourceTail tail = read_log_lines(fd.get(), path, encoding_, [&](const PlainLine& l) {
    if (l.number == 1) {
      boost::system::error_code ec;
      bool replaced = false;
      json::value v = parse_stored_line(l.text, ec, &replaced);
      std::optional<SessionHeader> h;
      if (!ec) h = parse_header(v);
      if (!h) return problem(1, "invalid session header");
      if (replaced) problem(1, kReplacedText);
      id = h->id;
      if (h->version != kSessionFormatVersion) return problem(1, "unsupported session format version");
      try {
        check_identity(*h, h->id, path);
      } catch (const StoreCorrupt& e) {
        problem(1, e.reason());
      }
      return;
    }
    std::string repaired;
    auto events = line_events(l.text, &repaired);
    if (!repaired.empty()) problem(l.number, kReplacedText);
    if (!events) {
      problem(l.number, "unparsable line (not a log record)");
      ++expect;  // most likely one event: the next line is then judged on its own
      return;
    }
    const json::value* sv = events->front().if_contains("seq");
    const std::int64_t seq = sv ? safe_int(*sv).value_or(-1) : -1;
    if (seq != expect) {
      problem(l.number, "event seq " + (sv ? support::to_json_text(*sv) : std::string("(missing)")) +
                            " is not contiguous; expected " + std::to_string(expect));
      if (seq >= 0) expect = seq;  // judge the next lines against this one
    }
    expect += std::int64_t(events->size());
  });
  if (tail.lines == 0) problem(1, "empty or header-less session log");
  else if (tail.torn)
    problem(tail.lines + 1, encoding_ == Encoding::zstd ? "torn final zstd frame" : "torn final line (no line end)");
  return id;
}

SessionStore::FileLog SessionStore::load_for_import(const std::string& id, const std::string& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("stat", path, errno);
  // A copy's batches come one after another: without this each would rescan the whole log.
  if (auto known = cached(id, path, file_stamp(st))) return std::move(*known);
  ScanResult scan = scan_log(fd, path, encoding_);
  check_identity(scan.header, id, path);
  if (scan.torn) {
    // A copy killed inside a batch: cut the torn tail (a zstd torn frame's recovered events go too,
    // so the copy resends them), and no closers, unlike repair: the source's own lines follow.
    if (::ftruncate(fd, off_t(scan.committed_bytes)) != 0) throw_errno("truncate", path, errno);
    fsync_fd(fd, path);
    scan = scan_log(fd, path, encoding_);
    if (::fstat(fd, &st) != 0) throw_errno("stat", path, errno);
  }
  FileLog f;
  f.log = published_log(id, path, std::move(scan.header), std::move(scan.state));
  f.stamp = file_stamp(st);
  return f;
}

void SessionStore::import_lines(const std::string& id, Generation g, const std::string& header_line,
                                std::int64_t first_seq, const std::vector<std::string>& lines) {
  if (g != generation_)
    throw StoreError("cannot copy a " + gen(g) + " session into a " + gen(generation_) + " root (" + root_ +
                     "): the lines are in the other generation's shape");
  if (read_only_) throw SessionReadOnly(id, read_only_reason(root_ + "/"));
  std::optional<SessionHeader> header = check_import_header(id, g, header_line, first_seq);
  // The normalised events feed the log state (title, times) the listing learns.
  std::vector<json::object> records;
  auto keep = [&](std::size_t, json::object&& e) { records.push_back(std::move(e)); };
  std::string text;
  for (const std::string& l : lines) {
    text.append(l);
    text += '\n';
  }

  if (header) {
    LogState after = check_import_lines(id, *header, {}, first_seq, lines, keep);
    const std::string path = log_path(*header);
    ensure_log_dirs(path);
    SessionLock lock = SessionLock::acquire(lock_path_of(path, id), lock_timeout_, id, {});
    if (find_log(id)) throw SessionExists(id);
    KnownLog log;
    log.id = id;
    log.path = path;
    log.header = std::move(*header);
    FileAppender appender(*this, std::move(lock), UniqueFd());
    appender.set_header_line(header_line + "\n");
    appender.write(log, text, records, true);  // published whole: header and lines, fsynced
    log.state = std::move(after);
    appender.committed(log);
    return;
  }

  auto path = find_log(id);
  if (!path) throw SessionNotFound(id);
  if (auto why = read_only_reason(*path); !why.empty()) throw SessionReadOnly(id, why);
  SessionLock lock = SessionLock::acquire(lock_path_of(*path, id), lock_timeout_, id, {});
  UniqueFd fd = open_nofollow(*path, O_RDWR);
  if (!fd) {
    if (errno == ENOENT) throw SessionNotFound(id);
    throw_errno("open", *path, errno);
  }
  FileLog f = load_for_import(id, *path, fd.get());
  remember(f.log, f.stamp);
  LogState after = check_import_lines(id, f.log.header, f.log.state, first_seq, lines, keep);
  if (lines.empty()) return;
  FileAppender appender(*this, std::move(lock), std::move(fd), f.stamp);
  appender.write(f.log, text, records, true);  // rolled back to the old length on failure
  f.log.state = std::move(after);
  appender.committed(f.log);
}

} // namespace acp::store
