#include "server/store_command.hpp"

#include "store/errors.hpp"
#include "store/fold.hpp"
#include "store/open_backend.hpp"
#include "store/pg/url.hpp"
#include "store/session_store.hpp"
#include "support/log.hpp"
#include "support/config.hpp"
#include "support/paths.hpp"
#include "support/sha256.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace acp::server {

namespace {

namespace st = acp::store;

constexpr std::size_t kBatchBytes = 4u << 20;  // per import: a copy never holds a whole big session
constexpr std::size_t kListPage = 500;
constexpr std::uint64_t kProgressBytes = 64u << 20;  // a progress line per this much of one session
constexpr int kMaxProblemsPerSession = 20;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command;
  std::vector<std::string> operands;
  std::optional<st::Encoding> encoding;
  std::optional<st::Generation> generation;
  std::size_t batch_bytes = kBatchBytes;
  std::optional<std::size_t> limit;  ///< search
  bool json = false;                 ///< search
  bool help = false;
};

Args parse_args(const std::vector<std::string>& args) {
  Args a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    const std::size_t eq = s.find('=');
    const std::string name = s.starts_with("--") ? s.substr(0, eq) : s;
    auto value = [&]() -> std::string {
      if (eq != std::string::npos) return s.substr(eq + 1);
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
      return args[++i];
    };
    if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (name == "--store-compression") {
      const std::string v = value();
      if (v == "zstd") a.encoding = st::Encoding::zstd;
      else if (v == "none") a.encoding = st::Encoding::none;
      else throw UsageError("--store-compression must be zstd or none, not \"" + v + "\"");
    } else if (name == "--store-generation") {
      const std::string v = value();
      a.generation = st::parse_generation(v);
      if (!a.generation) throw UsageError("--store-generation must be 45fc or 0.1, not \"" + v + "\"");
    } else if (name == "--batch-bytes") {
      const std::string v = value();
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || n == 0)
        throw UsageError("--batch-bytes must be a positive integer, not \"" + v + "\"");
      a.batch_bytes = n;
    } else if (name == "--limit") {
      const std::string v = value();
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || n == 0)
        throw UsageError("--limit must be a positive integer, not \"" + v + "\"");
      a.limit = n;
    } else if (s == "--json") {
      a.json = true;
    } else if (s.size() > 1 && s[0] == '-') {
      throw UsageError("unknown option " + name);
    } else if (a.command.empty()) {
      a.command = s;
    } else {
      a.operands.push_back(s);
    }
  }
  return a;
}

/// Streaming SHA-256.
class Digest {
public:
  void add(std::string_view s) { sha_.update(s); }
  /// The digest of everything added so far (it goes on).
  std::string value() const {
    const support::Sha256::Digest d = sha_.digest();
    return std::string(reinterpret_cast<const char*>(d.data()), d.size());
  }

private:
  support::Sha256 sha_;
};

/// A log's text as exported (its header line and event lines, each with its '\n'), measured.
struct Text {
  std::uint64_t bytes = 0;
  std::int64_t events = 0;
  Digest digest;
  void add(std::string_view line) {
    digest.add(line);
    digest.add("\n");
    bytes += line.size() + 1;
  }
};

std::int64_t events_of(std::string_view line, const std::string& id) {
  auto seqs = st::line_seqs(line);
  if (!seqs) throw st::StoreError("session \"" + id + "\": an exported line is not a log record");
  return seqs->second;
}

st::Generation measure(st::Backend& b, const std::string& id, Text& out) {
  return b.export_lines(
      id, [&](std::string_view h) { out.add(h); },
      [&](std::string_view l) {
        out.add(l);
        out.events += events_of(l, id);
      });
}

/// The shape of the lines of `id` in `b`: a root's own (its export refuses anything else); another
/// store's export of nothing (a PostgreSQL store keeps each session's generation).
st::Generation lines_generation(st::Backend& b, const std::string& id) {
  if (dynamic_cast<st::SessionStore*>(&b)) return b.generation();
  return b.export_lines(id, {}, {}, std::numeric_limits<std::int64_t>::max());
}

std::string human_bytes(std::uint64_t n) {
  char buf[32];
  if (n < 1024) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else if (n < (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / (1 << 20));
  return buf;
}

/// Every session of the store, in listing order (all pages).
std::vector<st::SessionListing> all_sessions(st::Backend& b) {
  std::vector<st::SessionListing> all;
  st::ListQuery q;
  q.limit = kListPage;
  for (;;) {
    auto page = b.list_sessions(q);
    if (page.empty()) break;
    q.after = std::pair{page.back().header.createdAt, page.back().header.id};
    const bool last = page.size() < kListPage;
    for (auto& r : page) all.push_back(std::move(r));
    if (last) break;
  }
  return all;
}

// ---- copy ----

enum class Outcome { copied, continued, complete, diverged, failed };

struct SessionCopy {
  Outcome outcome = Outcome::failed;
  std::int64_t events = 0;   ///< events copied now
  std::uint64_t bytes = 0;   ///< bytes copied now
  std::int64_t from_seq = 0; ///< where the copy started (continued)
  std::string why;           ///< diverged / failed
};

struct Diverged {
  std::string why;
};

// One session's copy: FROM's lines as they are exported, checked against what TO already holds
// (which must be a prefix of them), the rest imported in batches, then the whole compared.
class SessionCopier {
public:
  SessionCopier(st::Backend& from, st::Backend& to, const std::string& id, std::size_t batch_bytes)
      : from_(from), to_(to), id_(id), batch_bytes_(batch_bytes), in_dest_(to.find_log(id).has_value()) {
    if (in_dest_) measure(to_, id_, dest_);
    dest_digest_ = in_dest_ ? dest_.digest.value() : std::string();
    generation_ = lines_generation(from_, id_);
    prefix_checked_ = !in_dest_;
    // A destination holding the header alone (a session copied before its first prompt) is a prefix
    // too, but a backend appends only to a log with events (first seq 0 creates the log): such a log is
    // made again, header and events in one import, once FROM has events to add.
    header_only_ = in_dest_ && dest_.events == 0;
    created_ = in_dest_ && !header_only_;
    next_seq_ = dest_.events;
    r_.from_seq = dest_.events;
  }

  SessionCopy run() {
    try {
      from_.export_lines(
          id_, [&](std::string_view h) { on_header(h); }, [&](std::string_view l) { on_line(l); });
      if (!prefix_checked_)
        throw Diverged{"the destination holds " + std::to_string(dest_.events) + " events, the source only " +
                       std::to_string(src_.events)};
      flush();
    } catch (const Diverged& d) {
      r_.outcome = Outcome::diverged;
      r_.why = d.why;
      return r_;
    }
    if (r_.events == 0 && in_dest_) {
      r_.outcome = Outcome::complete;
      return r_;
    }
    verify();
    return r_;
  }

private:
  void check_prefix() {
    if (prefix_.bytes != dest_.bytes || prefix_.digest.value() != dest_digest_)
      throw Diverged{"the destination's " + std::to_string(dest_.events) + " events (" + std::to_string(dest_.bytes) +
                     " bytes) differ from the source's first ones"};
    prefix_checked_ = true;
  }

  void on_header(std::string_view h) {
    header_.assign(h);
    src_.add(h);
    if (!prefix_checked_) {
      prefix_.add(h);
      if (dest_.events == 0) check_prefix();
    } else if (!created_ && !header_only_) {
      r_.bytes += h.size() + 1;
    }
  }

  void on_line(std::string_view l) {
    const std::int64_t n = events_of(l, id_);
    src_.add(l);
    src_.events += n;
    if (!prefix_checked_) {
      prefix_.add(l);
      prefix_.events += n;
      if (prefix_.events > dest_.events)
        throw Diverged{"the destination's " + std::to_string(dest_.events) + " events end inside a line of the source"};
      if (prefix_.events == dest_.events) check_prefix();
      return;
    }
    batch_.emplace_back(l);
    batch_size_ += l.size() + 1;
    batch_events_ += n;
    if (batch_size_ >= batch_bytes_) flush();
  }

  void flush() {
    if (!created_) {
      if (header_only_) {
        if (batch_.empty()) return;
        to_.delete_session(id_);
      }
      to_.import_lines(id_, generation_, header_, 0, batch_);  // creates the log, header first
      created_ = true;
    } else if (!batch_.empty()) {
      to_.import_lines(id_, generation_, header_, next_seq_, batch_);
    } else {
      return;
    }
    next_seq_ += batch_events_;
    r_.events += batch_events_;
    r_.bytes += batch_size_;
    if (r_.bytes / kProgressBytes != (r_.bytes - batch_size_) / kProgressBytes)  // a big session: say it moves
      std::cerr << "  " << id_ << ": " << human_bytes(r_.bytes) << " so far\n";
    batch_.clear();
    batch_size_ = 0;
    batch_events_ = 0;
  }

  // Counts and bytes of the whole session as the destination now holds it.
  void verify() {
    Text after;
    measure(to_, id_, after);
    if (after.events != src_.events || after.bytes != src_.bytes || after.digest.value() != src_.digest.value()) {
      r_.outcome = Outcome::failed;
      r_.why = "verification after the copy failed: the destination holds " + std::to_string(after.events) +
               " events in " + std::to_string(after.bytes) + " bytes, the source " + std::to_string(src_.events) +
               " in " + std::to_string(src_.bytes);
      return;
    }
    r_.outcome = in_dest_ ? Outcome::continued : Outcome::copied;
  }

  st::Backend& from_;
  st::Backend& to_;
  const std::string& id_;
  const std::size_t batch_bytes_;
  const bool in_dest_;
  SessionCopy r_;
  Text dest_;  // what TO held before
  std::string dest_digest_;
  st::Generation generation_ = st::Generation::flat;
  Text src_;     // all of FROM's text
  Text prefix_;  // FROM's text up to TO's event count
  bool prefix_checked_ = false;
  bool header_only_ = false;
  bool created_ = false;
  std::string header_;
  std::vector<std::string> batch_;
  std::uint64_t batch_size_ = 0;
  std::int64_t batch_events_ = 0;
  std::int64_t next_seq_ = 0;
};

SessionCopy copy_session(st::Backend& from, st::Backend& to, const std::string& id, std::size_t batch_bytes) {
  return SessionCopier(from, to, id, batch_bytes).run();
}

/// Opens a store for reading: a directory must exist.
std::unique_ptr<st::Backend> open_source(const std::string& spec, const st::StoreOptions& o) {
  if (!st::pg::is_postgres_url(spec) && !support::is_directory(spec))
    throw UsageError(spec + ": no such directory (a store is a directory or a postgresql:// URL)");
  st::StoreOptions ro = o;
  ro.read_only = true;
  return st::open_backend(spec, ro);
}

/// The stores of a copy, opened: FROM read-only, TO (made when missing) in FROM's shape unless the
/// flags say otherwise. False (after saying why) when either cannot be opened.
bool open_copy_stores(const Args& a, std::unique_ptr<st::Backend>& from, std::unique_ptr<st::Backend>& to) {
  try {
    st::StoreOptions o;
    from = open_source(a.operands[0], o);
    // A new destination root takes the source's shape unless told otherwise.
    o.encoding = a.encoding;
    if (!o.encoding)
      if (auto* fs = dynamic_cast<st::SessionStore*>(from.get())) o.encoding = fs->encoding();
    o.generation = a.generation;
    o.default_generation = from->generation();
    to = st::open_backend(a.operands[1], o);
  } catch (const UsageError&) {
    throw;
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store copy: " << e.what() << "\n";
    return false;
  }
  return true;
}

/// What a copy did so far, over all sessions.
struct CopyTally {
  std::size_t copied = 0, continued = 0, complete = 0, problems = 0, done = 0;
  std::int64_t events = 0;
  std::uint64_t bytes = 0;

  /// Counts one session's copy; what it did, in words.
  std::string add(const SessionCopy& c) {
    ++done;
    events += c.events;
    bytes += c.bytes;
    switch (c.outcome) {
      case Outcome::copied:
        ++copied;
        return "copied " + std::to_string(c.events) + " events (" + human_bytes(c.bytes) + ")";
      case Outcome::continued:
        ++continued;
        return "continued from seq " + std::to_string(c.from_seq) + ": " + std::to_string(c.events) + " events (" +
               human_bytes(c.bytes) + ")";
      case Outcome::complete:
        ++complete;
        return "already complete";
      case Outcome::diverged:
        ++problems;
        return "DIVERGED, left untouched: " + c.why;
      case Outcome::failed:
        ++problems;
        return "FAILED: " + c.why;
    }
    return {};
  }
};

void copy_sessions(const Args& a, st::Backend& from, st::Backend& to, const std::vector<st::SessionListing>& sessions,
                   CopyTally& tally) {
  for (const auto& s : sessions) {
    const std::string& id = s.header.id;
    SessionCopy c;
    try {
      c = copy_session(from, to, id, a.batch_bytes);
    } catch (const std::exception& e) {
      c.outcome = Outcome::failed;
      c.why = e.what();
    }
    const std::string what = tally.add(c);
    std::cerr << "[" << tally.done << "/" << sessions.size() << "] " << id << ": " << what << "; "
              << human_bytes(tally.bytes) << " copied so far\n";
    if (c.outcome == Outcome::diverged || c.outcome == Outcome::failed) std::cout << id << ": " << what << "\n";
  }
}

// Logs the listing skips (an invalid header) are not copied: say so, the copy is incomplete.
void report_unlisted(st::Backend& from, const std::vector<st::SessionListing>& sessions, const std::string& from_name,
                     CopyTally& tally) {
  auto* fs = dynamic_cast<st::SessionStore*>(&from);
  if (!fs) return;
  std::set<std::string> listed;
  for (const auto& s : sessions) {
    try {
      listed.insert(fs->log_path(s.header));
    } catch (const st::StoreError&) {
    }
  }
  for (const auto& path : fs->log_paths())
    if (!listed.count(path)) {
      ++tally.problems;
      std::cout << path << ": not copied: not a listed session of " << from_name
                << " (dsh-acp store verify says why)\n";
    }
}

int run_copy(const Args& a) {
  if (a.operands.size() != 2) throw UsageError("store copy takes FROM and TO");
  const std::string from_name = st::pg::redact_url(a.operands[0]), to_name = st::pg::redact_url(a.operands[1]);
  std::unique_ptr<st::Backend> from, to;
  if (!open_copy_stores(a, from, to)) return 2;
  if (to->read_only()) throw UsageError(to_name + " is read-only");
  if (dynamic_cast<st::SessionStore*>(from.get()) && dynamic_cast<st::SessionStore*>(to.get()) &&
      from->generation() != to->generation()) {
    std::cerr << "dsh-acp store copy: cannot copy the " << st::generation_name(from->generation()) << " root "
              << from->name() << " into the " << st::generation_name(to->generation()) << " root " << to->name()
              << "\n";
    return 2;
  }

  std::vector<st::SessionListing> sessions;
  try {
    sessions = all_sessions(*from);
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store copy: " << from_name << ": " << e.what() << "\n";
    return 2;
  }
  std::cerr << "copying " << sessions.size() << " sessions from " << from_name << " to " << to_name << "\n";
  CopyTally tally;
  copy_sessions(a, *from, *to, sessions, tally);
  report_unlisted(*from, sessions, from_name, tally);
  try {
    to->flush();
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store copy: " << e.what() << "\n";
  }
  std::cout << "copy " << from_name << " -> " << to_name << ": " << sessions.size() << " sessions, " << tally.copied
            << " copied, " << tally.continued << " continued, " << tally.complete << " already complete, "
            << tally.problems << " with problems; " << tally.events << " events (" << tally.bytes
            << " bytes) written\n";
  std::cout.flush();
  return tally.problems ? 1 : 0;
}

// ---- verify ----

/// The problems a verify found, reported as they are found.
struct Problems {
  std::size_t count = 0;
  std::map<std::string, int> found;                          // session (its id, else its path) -> problems
  std::set<std::pair<std::string, std::int64_t>> reported;  // (path, line) the line check named

  // One line per problem: "<id>: <what>", or "<what>" alone when the log has no id to name (what
  // then starts with its path).
  void report(const std::string& who, const std::string& what) {
    ++count;
    const int n = ++found[who];
    if (n <= kMaxProblemsPerSession) std::cout << (what.starts_with(who) ? what : who + ": " + what) << "\n";
    else if (n == kMaxProblemsPerSession + 1) std::cout << who << ": further problems not shown\n";
  }
};

// Every line of every log file, strictly: also logs the listing skips (an invalid header) and
// lines past the committed prefix the reader stops at. The number of log files.
std::size_t check_log_files(st::SessionStore& files, Problems& problems) {
  const std::vector<std::string> paths = files.log_paths();
  for (const auto& path : paths) {
    std::vector<std::pair<std::int64_t, std::string>> here;
    std::string id;
    try {
      id = files.check_log_file(path, [&](std::int64_t line, const std::string& why) { here.emplace_back(line, why); });
    } catch (const st::StoreCorrupt& e) {
      here.emplace_back(e.line(), e.reason());
    } catch (const st::StoreError& e) {
      here.emplace_back(0, e.what());
    }
    for (const auto& [line, why] : here) {
      problems.reported.insert({path, line});
      problems.report(id.empty() ? path : id, path + ":" + std::to_string(line) + ": " + why);
    }
  }
  return paths.size();
}

// Another store's lines, as they are stored: each a record, seqs contiguous.
void check_exported_lines(st::Backend& b, const std::string& id, Problems& problems) {
  try {
    std::int64_t expect = 0, line = 1;
    b.export_lines(id, {}, [&](std::string_view l) {
      ++line;
      auto seqs = st::line_seqs(l);
      if (!seqs) return problems.report(id, "line " + std::to_string(line) + ": unparsable line (not a log record)");
      if (seqs->first != expect)
        problems.report(id, "line " + std::to_string(line) + ": event seq " + std::to_string(seqs->first) +
                                " is not contiguous; expected " + std::to_string(expect));
      expect = seqs->first + seqs->second;
    });
  } catch (const st::StoreError& e) {
    problems.report(id, e.what());
  }
}

/// The session's events folded as a load folds them; how many there are (0 after a problem).
std::int64_t check_fold(st::Backend& b, const std::string& id, Problems& problems) {
  try {
    st::SurfaceFold fold;
    b.read_events(
        id, [&](boost::json::object&& e) { fold.apply(e); }, {}, st::EventLifetime::transient);
    return fold.count();
  } catch (const st::FoldError& e) {
    problems.report(id, std::string("invalid surface: ") + e.what());
  } catch (const st::StoreCorrupt& e) {
    if (!problems.reported.count({e.file(), e.line()})) problems.report(id, e.what());
  } catch (const st::StoreError& e) {
    problems.report(id, e.what());
  }
  return 0;
}

int run_verify(const Args& a) {
  if (a.operands.size() != 1) throw UsageError("store verify takes one STORE");
  const std::string name = st::pg::redact_url(a.operands[0]);
  std::unique_ptr<st::Backend> b;
  std::vector<st::SessionListing> sessions;
  try {
    b = open_source(a.operands[0], {});
    sessions = all_sessions(*b);
  } catch (const UsageError&) {
    throw;
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store verify: " << e.what() << "\n";
    return 2;
  }
  auto* files = dynamic_cast<st::SessionStore*>(b.get());
  std::size_t total = sessions.size();
  std::int64_t events = 0;
  Problems problems;
  if (files) total = std::max(total, check_log_files(*files, problems));
  std::size_t done = 0;
  for (const auto& s : sessions) {
    const std::string& id = s.header.id;
    if (!files) check_exported_lines(*b, id, problems);
    events += check_fold(*b, id, problems);
    ++done;
    if (done % 100 == 0 || done == sessions.size())
      std::cerr << "[" << done << "/" << sessions.size() << "] sessions verified\n";
  }
  std::cout << "verify " << name << ": " << total << " sessions, " << events << " events; ";
  if (problems.count) std::cout << problems.count << " problems in " << problems.found.size() << " sessions\n";
  else std::cout << "no problems\n";
  std::cout.flush();
  return problems.count ? 1 : 0;
}

// ---- index, search (recall by content, docs/recall.md) ----

/// Opens a store to index or search: read-only (the index lives in the cache directory, the
/// server's, so both see one index).
std::unique_ptr<st::Backend> open_for_content(const std::string& spec) {
  st::StoreOptions o;
  o.cache_dir = support::cache_dir_of(support::process_environment());
  return open_source(spec, o);
}

int run_index(const Args& a) {
  if (a.operands.size() != 1) throw UsageError("store index takes one STORE");
  const std::string name = st::pg::redact_url(a.operands[0]);
  try {
    std::unique_ptr<st::Backend> b = open_for_content(a.operands[0]);
    st::IndexProgress p = b->index_content([&](const st::IndexProgress& p) {
      std::cerr << "[" << p.done << "/" << p.total << "] sessions looked at, " << p.indexed << " to index\n";
    });
    std::cout << "index " << name << ": " << p.total << " sessions, " << p.indexed << " indexed\n";
  } catch (const UsageError&) {
    throw;
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store index: " << e.what() << "\n";
    return 2;
  }
  std::cout.flush();
  return 0;
}

int run_search(const Args& a) {
  if (a.operands.size() < 2) throw UsageError("store search takes STORE and WORDS");
  st::ContentQuery q;
  for (std::size_t i = 1; i < a.operands.size(); ++i) q.words += (i > 1 ? " " : "") + a.operands[i];
  q.limit = a.limit.value_or(10);
  std::vector<st::ContentHit> hits;
  try {
    std::unique_ptr<st::Backend> b = open_for_content(a.operands[0]);
    hits = b->search_content(q);
  } catch (const UsageError&) {
    throw;
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store search: " << e.what() << "\n";
    return 2;
  }
  for (const st::ContentHit& h : hits) {
    if (a.json) {
      boost::json::object o;
      o["id"] = h.session_id;
      o["seq"] = h.seq;
      o["kind"] = std::string(st::text_kind_name(h.kind));
      o["score"] = h.score;
      o["snippet"] = h.snippet;
      std::cout << boost::json::serialize(o) << "\n";
    } else {
      char score[32];
      std::snprintf(score, sizeof score, "%.3f", h.score);
      std::cout << h.session_id << "\t" << h.seq << "\t" << st::text_kind_name(h.kind) << "\t" << score << "\t"
                << h.snippet << "\n";
    }
  }
  std::cout.flush();
  return 0;
}

// ---- migrate ----

int run_migrate(const Args& a) {
  if (a.operands.size() != 1) throw UsageError("store migrate takes one URL");
  const std::string& url = a.operands[0];
  if (!st::pg::is_postgres_url(url)) throw UsageError(url + " is not a postgresql:// or postgres:// URL");
  try {
    st::migrate_store(url);
  } catch (const st::StoreError& e) {
    std::cerr << "dsh-acp store migrate: " << e.what() << "\n";
    return 2;
  }
  std::cout << "migrate " << st::pg::redact_url(url) << ": schema is current\n";
  return 0;
}

} // namespace

std::string store_usage_text() {
  return "Usage: dsh-acp store copy [options] FROM TO\n"
         "       dsh-acp store verify STORE\n"
         "       dsh-acp store migrate URL\n"
         "       dsh-acp store index STORE\n"
         "       dsh-acp store search [--limit N] [--json] STORE WORDS...\n"
         "Moves sessions between stores, checks them and finds them by what was said. A store is a directory (a root of harness log\n"
         "files, 45fc or 0.1 layout, zstd or plain JSONL) or a postgresql:// / postgres:// URL (credentials\n"
         "the libpq ways: PGPASSFILE, a service file, PGPASSWORD; passwords are never printed).\n\n"
         "  copy     copies every session of FROM into TO, byte for byte. Idempotent and resumable: a session\n"
         "           TO already holds whole is skipped, one it holds a prefix of is continued after the\n"
         "           prefix's bytes are checked, one that differs is reported and left untouched. Counts and\n"
         "           bytes are verified after each session.\n"
         "  verify   checks every session: header, parseable lines, contiguous seqs, a valid surface.\n"
         "  migrate  creates or upgrades the schema of a PostgreSQL store.\n"
         "  index    builds or catches up the store's content index (a directory's lives in the cache\n"
         "           directory, $XDG_CACHE_HOME/dsh-acp; PostgreSQL's in the database), with progress.\n"
         "  search   the sessions whose messages, tool calls and results hold any of WORDS, best first:\n"
         "           one line per session, tab-separated: id, seq, kind, score, snippet (--json: one\n"
         "           JSON object per line). --limit N: at most N sessions (default 10).\n\n"
         "Options (copy; for a TO directory that holds no log yet, which otherwise takes FROM's layout):\n"
         "  --store-compression zstd|none   --store-generation 45fc|0.1\n"
         "  --batch-bytes N                 bytes of lines per import batch (default 4194304)\n\n"
         "Output: problems, hits and the summary on stdout, progress and errors on stderr.\n"
         "Exit status: 0 ok, 1 problems found or copy incomplete, 2 usage or start-up errors.\n";
}

int run_store_command(const std::vector<std::string>& args) {
  // A command's warnings (a store's, a server's notices) are for the person running it.
  log::to_stderr(log::Level::warn);
  try {
    Args a = parse_args(args);
    if (a.help || a.command == "help") {
      std::cout << store_usage_text();
      return 0;
    }
    if (a.command.empty()) throw UsageError("store needs a command: copy, verify, migrate, index or search");
    for (const auto& spec : a.operands)
      if (st::pg::is_postgres_url(spec) && st::pg::url_has_password(spec))
        throw UsageError(st::pg::redact_url(spec) +
                         ": a password in the URL is refused; give it through PGPASSFILE, a service file or PGPASSWORD");
    if ((a.limit || a.json) && a.command != "search")
      throw UsageError("--limit and --json are options of store search");
    if (a.command == "copy") return run_copy(a);
    if ((a.encoding || a.generation || a.batch_bytes != kBatchBytes))
      throw UsageError("--store-compression, --store-generation and --batch-bytes are options of store copy");
    if (a.command == "search") return run_search(a);
    if (a.command == "verify") return run_verify(a);
    if (a.command == "migrate") return run_migrate(a);
    if (a.command == "index") return run_index(a);
    throw UsageError("unknown store command \"" + a.command + "\" (copy, verify, migrate, index or search)");
  } catch (const UsageError& e) {
    std::cerr << "dsh-acp store: " << e.what() << "\nTry 'dsh-acp store --help'.\n";
    return 2;
  }
}

} // namespace acp::server
