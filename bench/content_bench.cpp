// bench_content: recall by content over a file root (issue 29, docs/recall.md#file-stores).
//
// Writes a temporary root of N sessions (default 10,000) holding about M MB of logs (default 1,000)
// through SessionWriter: turns of a user message, streamed agent text (chunks) and its message, a
// tool call and its result, words drawn from a Zipf-distributed synthetic vocabulary plus a few
// words particular to each session. Then, through the store library (no ACP process):
//   build      SessionStore::index_content() on a fresh cache directory (`dsh-acp store index`),
//              the logs in the page cache (they were just written)
//   size       the index file (with its WAL) over the logs' bytes on disk
//   query      ~200 varied questions (a session's rare words, mid-frequency words, common words;
//              1-4 terms) through SessionStore::search_content: catch-up with the listing (a stat
//              per log an inotify event named), FTS5 query, snippets read from the logs; p50, p95
//   scan       the same for a few questions through Backend::search_content, the plain scan of
//              every log (no index), the baseline
//   fresh      a turn written through SessionWriter, then searched for until found: the writer
//              hands its texts to the background indexer; median of runs
//   rss        VmRSS of this process with the listing only, then with the index open and queried
//   write      a turn appended with fsync through a store with the index open (its texts handed to
//              the background indexer) against one without a cache directory, alternating rounds
// Usage: bench_content [--sessions N] [--mb M] [--queries Q] [--zstd] [--keep DIR [--keep-index]]
// --keep-index: the index a --keep run left is caught up instead of built (queries only; no build figure).
#include "store/content_index.hpp"
#include "store/event_builders.hpp"
#include "store/session_store.hpp"
#include "store/session_writer.hpp"

#include "bench_result.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
namespace st = acp::store;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of this process (user + system), ms: what a loaded machine disturbs least.
double cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// CPU time of the calling thread, ms.
double thread_cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

double rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

std::uint64_t bytes_under(const std::string& dir) {
  std::uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

// A pronounceable synthetic word per index: the vocabulary is big (like code and prose together)
// and the same index always gives the same word.
std::string word(std::uint32_t i) {
  static const char* syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "zo", "pe", "da", "fu", "gri",
                              "tor", "an", "el", "os", "un", "ber", "cal", "dex", "fin", "gon", "hul"};
  constexpr std::uint32_t n = sizeof syl / sizeof *syl;
  std::string w;
  std::uint32_t x = i + 7;
  do {
    w += syl[x % n];
    x /= n;
  } while (x);
  return w;
}

struct Corpus {
  std::mt19937_64 rng{42};
  std::vector<double> cdf;  // Zipf over the vocabulary
  explicit Corpus(std::uint32_t vocabulary) {
    cdf.resize(vocabulary);
    double sum = 0;
    for (std::uint32_t i = 0; i < vocabulary; ++i) cdf[i] = sum += 1.0 / std::pow(double(i + 1), 1.05);
    for (double& c : cdf) c /= sum;
  }
  std::uint32_t draw() {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return std::uint32_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
  }
  std::string text(std::size_t words, const std::vector<std::string>& topic) {
    std::string out;
    for (std::size_t i = 0; i < words; ++i) {
      if (!out.empty()) out += (i % 13 == 0) ? ". " : " ";
      if (!topic.empty() && rng() % 40 == 0) out += topic[rng() % topic.size()];
      else out += word(draw());
    }
    return out;
  }
};

json::array text_block(const std::string& t) {
  json::object b;
  b["type"] = "text";
  b["text"] = t;
  return json::array{b};
}

// One prompt turn as the server writes it: streamed text in chunks, then the message, a tool round.
void write_turn(st::SessionWriter& w, Corpus& c, const std::vector<std::string>& topic, std::int64_t time,
                std::size_t scale, bool sync = false) {
  const std::int64_t turn = w.last_turn() + 1;
  std::vector<st::NewEvent> ev{st::events::turn_start(turn), st::events::user_message(c.text(20 + scale / 4, topic))};
  if (!w.title()) ev.push_back(st::events::session_title("a session", w.next_seq() + 1));
  ev.push_back(st::events::step_start(turn, 1));
  const std::string call = "call-" + std::to_string(turn);
  ev.push_back(st::events::tool_call(turn, 1, call, "read",
                                     "{\"path\":\"src/" + word(c.draw()) + "/" + word(c.draw()) + ".cpp\"}"));
  const std::int64_t call_seq = w.next_seq() + std::int64_t(ev.size()) - 1;
  ev.push_back(st::events::tool_result(turn, 1, call, text_block(c.text(scale, topic)), false, call_seq));
  ev.push_back(st::events::step_end(turn, 1));
  ev.push_back(st::events::step_start(turn, 2));
  const std::string answer = c.text(40 + scale / 3, topic);
  json::array seqs;
  for (std::size_t at = 0; at < answer.size(); at += 160) {
    seqs.push_back(w.next_seq() + std::int64_t(ev.size()));
    ev.push_back(st::events::text_delta(turn, 2, 0, answer.substr(at, 160)));
  }
  ev.push_back(st::events::assistant_message(turn, 2, text_block(answer), "echo", "echo-1", std::nullopt, seqs));
  ev.push_back(st::events::step_end(turn, 2));
  json::object reason;
  reason["kind"] = "completed";
  ev.push_back(st::events::turn_end(turn, reason));
  for (auto& e : ev) e.time = time;
  w.append(std::move(ev), sync);
}

st::StoreOptions options(const std::string& dir, bool zstd) {
  st::StoreOptions o;
  o.root = dir + "/root";
  o.cache_dir = dir + "/cache";
  o.encoding = zstd ? st::Encoding::zstd : st::Encoding::none;
  return o;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t sessions = 10000, mb = 1000, queries = 200;
  bool zstd = false, keep_index = false;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--sessions") sessions = std::stoul(next());
    else if (a == "--mb") mb = std::stoul(next());
    else if (a == "--queries") queries = std::stoul(next());
    else if (a == "--zstd") zstd = true;
    else if (a == "--keep") keep = next();
    else if (a == "--keep-index") keep_index = true;  // with --keep: the last run's index, caught up (no build figure)
    else {
      std::fprintf(stderr, "usage: bench_content [--sessions N] [--mb M] [--queries Q] [--zstd] [--keep DIR [--keep-index]]\n");
      return 2;
    }
  }
  const std::string dir = keep.empty() ? (fs::temp_directory_path() / ("bench-content-" + std::to_string(::getpid()))).string()
                                       : keep;
  const std::string enc = zstd ? "zstd" : "raw";
  const std::string note_corpus = std::to_string(sessions) + " sessions, " + enc;
  Corpus corpus(50000);
  std::vector<std::vector<std::string>> topics(sessions);
  const bool reuse = !keep.empty() && fs::exists(dir + "/root");
  if (!reuse) {
    fs::remove_all(dir);
    // Turn size so the total comes out near the requested megabytes: ~8 turns a session.
    const std::size_t per_session = mb * 1000000 / sessions;
    const std::size_t turns = std::max<std::size_t>(1, std::min<std::size_t>(8, per_session / 4000));
    const std::size_t scale = std::max<std::size_t>(10, per_session / turns / 16);
    auto t0 = Clock::now();
    st::SessionStore store(options(dir, zstd));
    for (std::size_t s = 0; s < sessions; ++s) {
      st::SessionHeader h;
      h.id = "s" + std::to_string(s);
      h.createdAt = 1780000000000 + std::int64_t(s);
      h.cwd = "/work/project" + std::to_string(s % 20);
      auto w = store.create(h);
      for (std::size_t t = 0; t < turns; ++t) write_turn(w, corpus, {}, h.createdAt + std::int64_t(t), scale);
    }
    std::printf("generated %zu sessions in %.1f s\n", sessions, ms_since(t0) / 1000);
  }
  // Each session's own rare words: what a person remembers of it.
  for (std::size_t s = 0; s < sessions; ++s)
    for (int k = 0; k < 3; ++k) topics[s].push_back("topic" + word(std::uint32_t(s * 3 + std::size_t(k))));
  // Topic words are added after the fact: a turn per session of a few hundred bytes, so a query
  // for them has exactly one session to find.
  if (!reuse) {
    st::SessionStore store(options(dir, zstd));
    for (std::size_t s = 0; s < sessions; ++s) {
      auto w = store.open("s" + std::to_string(s));
      const std::int64_t turn = w.last_turn() + 1;
      std::vector<st::NewEvent> ev{st::events::turn_start(turn),
                                   st::events::user_message("about " + topics[s][0] + " and " + topics[s][1] +
                                                            " then " + topics[s][2] + " " + corpus.text(20, {})),
                                   st::events::turn_end(turn, json::object{{"kind", "completed"}})};
      w.append(std::move(ev));
    }
  }
  const std::uint64_t log_bytes = bytes_under(dir + "/root");
  std::printf("logs: %.1f MB (%s) in %s\n", double(log_bytes) / 1e6, enc.c_str(), dir.c_str());
  if (!(reuse && keep_index)) fs::remove_all(dir + "/cache");

  st::SessionStore store(options(dir, zstd));
  store.list_sessions();
  const double rss_without = rss_mb();

  // build
  auto t0 = Clock::now();
  double c0 = cpu_ms();
  st::IndexProgress p = store.index_content();
  const double build_s = ms_since(t0) / 1000;
  const double build_cpu_s = (cpu_ms() - c0) / 1000;
  std::string index_file = store.content_index()->file();
  std::uint64_t index_bytes = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    auto n = fs::file_size(index_file + suffix, ec);
    if (!ec) index_bytes += n;
  }
  std::printf("build: %zu sessions in %.1f s (CPU %.1f s); index %.1f MB = %.1f%% of the logs\n", p.total, build_s,
              build_cpu_s, double(index_bytes) / 1e6, 100.0 * double(index_bytes) / double(log_bytes));
  if (!keep_index) bench::result("i29_file_build_s", build_s, "s", "\"note\":\"" + note_corpus + ", " +
                                                       std::to_string(log_bytes / 1000000) + " MB\"");
  bench::result("i29_file_size_pct", 100.0 * double(index_bytes) / double(log_bytes), "%",
                "\"note\":\"" + std::to_string(index_bytes / 1000000) + " MB of " +
                    std::to_string(log_bytes / 1000000) + " MB " + enc + " logs\"");

  // queries
  std::mt19937_64 rng(7);
  std::vector<std::string> qs;
  std::vector<std::size_t> q_session;
  for (std::size_t i = 0; i < queries; ++i) {
    std::string q;
    const std::size_t s = rng() % sessions;
    q_session.push_back(s);
    switch (i % 4) {
    case 0: q = "what did we say about " + topics[s][rng() % 3]; break;                       // one session's word
    case 1: q = topics[s][0] + " " + word(std::uint32_t(200 + rng() % 2000)); break;         // rare + mid
    case 2: q = word(std::uint32_t(50 + rng() % 500)) + " " + word(std::uint32_t(50 + rng() % 500)); break;  // mid
    default: q = word(std::uint32_t(rng() % 20)) + " " + word(std::uint32_t(rng() % 20)) + " " +
                 word(std::uint32_t(1000 + rng() % 20000)) + " " + topics[s][1];                // common + rare
    }
    qs.push_back(q);
  }
  std::vector<double> times;
  std::size_t found_own = 0, own = 0;
  c0 = cpu_ms();
  for (std::size_t i = 0; i < qs.size(); ++i) {
    st::ContentQuery q;
    q.words = qs[i];
    auto t = Clock::now();
    auto hits = store.search_content(q);
    times.push_back(ms_since(t));
    if (i % 4 == 0) {
      ++own;
      found_own += !hits.empty() && hits[0].session_id == "s" + std::to_string(q_session[i]);
    }
  }
  const double query_cpu = (cpu_ms() - c0) / double(qs.size());
  const double p50 = percentile(times, 0.5), p95 = percentile(times, 0.95);
  std::printf("query: p50 %.2f ms, p95 %.2f ms, max %.2f ms over %zu questions (CPU %.2f ms each); %zu of %zu "
              "one-session questions found their session first\n",
              p50, p95, percentile(times, 1.0), times.size(), query_cpu, found_own, own);
  bench::result("i29_file_query_p50_ms", p50, "ms", "\"note\":\"" + note_corpus + "\"");
  bench::result("i29_file_query_p95_ms", p95, "ms", "\"note\":\"" + note_corpus + "\"");

  // catch-up alone: no log changed, one stat per log
  {
    std::vector<double> cu;
    c0 = cpu_ms();
    st::ContentQuery q;
    q.words = "nowhereatall";  // no row matches: the search is its catch-up
    for (int i = 0; i < 20; ++i) {
      auto t = Clock::now();
      store.search_content(q);
      cu.push_back(ms_since(t));
    }
    std::printf("a search matching nothing, i.e. its catch-up with nothing changed (the listing, watched "
                "directories): median %.2f ms (CPU %.2f ms)\n",
                percentile(cu, 0.5), (cpu_ms() - c0) / 20);
    c0 = cpu_ms();
    auto t = Clock::now();
    store.index_content();
    std::printf("`store index` with nothing changed (a stat per log): %.2f ms (CPU %.2f ms)\n", ms_since(t),
                cpu_ms() - c0);
  }

  const double rss_with = rss_mb();
  std::printf("rss: %.1f MB with the listing, %.1f MB with the index open and queried (+%.1f MB)\n", rss_without,
              rss_with, rss_with - rss_without);
  bench::result("i29_file_rss_mb", rss_with - rss_without, "MB", "\"note\":\"" + note_corpus + "\"");

  // freshness: a turn written, then searched for until found
  {
    std::vector<double> fresh, indexed;
    for (int i = 0; i < 11; ++i) {
      const std::string unique = "fresh" + word(std::uint32_t(900000 + i));
      auto w = store.open("s" + std::to_string(std::size_t(i) * 37 % sessions));
      const std::int64_t turn = w.last_turn() + 1;
      std::vector<st::NewEvent> ev{st::events::turn_start(turn), st::events::user_message("remember " + unique),
                                   st::events::turn_end(turn, json::object{{"kind", "completed"}})};
      w.append(std::move(ev), true);
      auto t = Clock::now();  // the turn is answered and committed
      if (i % 2) {
        // The background indexer alone: committed -> its rows committed to the index.
        store.content_index()->drain();
        indexed.push_back(ms_since(t));
        continue;
      }
      st::ContentQuery q;
      q.words = unique;
      while (store.search_content(q).empty()) {
      }
      fresh.push_back(ms_since(t));
    }
    std::printf("fresh: a committed turn found by a search after median %.2f ms, max %.2f ms (a search's own time "
                "included); in the index by the background indexer after median %.2f ms\n",
                percentile(fresh, 0.5), percentile(fresh, 1.0), percentile(indexed, 0.5));
    bench::result("i29_file_fresh_ms", percentile(fresh, 0.5), "ms", "\"note\":\"" + note_corpus + "\"");
  }

  // the write path: turns appended (fsync on, as a prompt's) with the index open, whose writer hands
  // each batch's texts to the background indexer, against the same through a store of the same root
  // without a cache directory (no index), rounds alternating; median time per turn of each
  {
    st::StoreOptions plain = options(dir, zstd);
    plain.cache_dir.clear();
    st::SessionStore without(plain);
    std::vector<double> with_ms, without_ms;
    double with_cpu = 0, without_cpu = 0;
    for (int round = 0; round < 12; ++round) {
      const bool indexed = round % 2 == 0;
      st::SessionStore& target = indexed ? store : without;
      auto w = target.open("s" + std::to_string(std::size_t(round) * 101 % sessions));
      for (int t = 0; t < 15; ++t) {
        auto t0 = Clock::now();
        const double c0 = thread_cpu_ms();
        write_turn(w, corpus, {}, 1790000000000 + t, 200, true);
        (indexed ? with_ms : without_ms).push_back(ms_since(t0));
        (indexed ? with_cpu : without_cpu) += thread_cpu_ms() - c0;
      }
    }
    store.content_index()->drain();
    const double a = percentile(with_ms, 0.5), b = percentile(without_ms, 0.5);
    std::printf("write path: a turn (fsync on) appended in median %.3f ms with the index open, %.3f ms without "
                "(%+.1f%%); the writing thread's CPU %.3f vs %.3f ms a turn\n",
                a, b, 100 * (a - b) / b, with_cpu / double(with_ms.size()), without_cpu / double(without_ms.size()));
    bench::result("i29_file_write_growth_pct", 100 * (a - b) / b, "%",
                  "\"note\":\"" + note_corpus + ", median of 90 turns each, alternating rounds\"");
  }

  // the plain scan of every log, the baseline
  {
    std::vector<double> scan;
    for (std::size_t i = 0; i < 3; ++i) {
      st::ContentQuery q;
      q.words = qs[i];
      auto t = Clock::now();
      store.st::Backend::search_content(q);
      scan.push_back(ms_since(t));
    }
    std::printf("plain scan (no index): median %.0f ms per question over 3\n", percentile(scan, 0.5));
    bench::result("i29_file_scan_ms", percentile(scan, 0.5), "ms", "\"note\":\"" + note_corpus + "\"");
  }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
