// bench_pg_search: recall by content in a PostgreSQL store (docs/recall.md#postgresql-stores), through
// the store library (no ACP process). Run by bench/pg_bench.py against its throwaway cluster:
//   bench_pg_search URL [SESSIONS]     URL: a migrated database, as a role in dsh_acp_user
// Writes SESSIONS sessions (default 10,000) through PgStore writers as dsh-acp writes them (each
// with its texts, in the batches' own transactions), 4 turns each: the person's question, a tool call
// and its result (~3 KB), the agent's answer, over a generated vocabulary of 20,000 words drawn
// log-uniformly (a few common words, a long tail of rare ones). Then prints:
//   write     seconds for the corpus (and how long the indexer took past the last write); and the write
//             path's growth: sessions written with their texts against the same sessions whose words
//             are all stop words (nothing to index), alternating (the texts are indexed after each
//             batch's commit by the store's indexer thread, which then competes for the same CPUs)
//   fresh     a turn committed -> found by a search: from another store (as another process: the
//             writer's indexer is what it waits for) and from the writer's own, medians of 20
//   size      dsh_acp.search (table, TOAST and indexes) against dsh_acp.events, as the role sees them
//   query     search_content p50/p95 over 200 questions of 1 to 4 words (common, rare, mixed)
//   scan      the plain scan of the logs (Backend::search_content, the default) for the same kind of
//             question: a few, it reads every session
//   backfill  index_content() after the role's texts are dropped (as an older dsh-acp left them):
//             sessions per second
// --query-only (third argument): the sessions are an earlier run's; the questions and the write
// figure only. Nothing is asserted.
#include "../tests/common/new_events.hpp"
#include "store/pg/connection.hpp"
#include "store/pg/pg_store.hpp"
#include "store/session_writer.hpp"

#include "bench_result.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace json = boost::json;
using namespace acp::store;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

constexpr std::size_t kVocabulary = 20000;

// Word i of the vocabulary: syllables, so every word is distinct and none is a stop word.
std::string word(std::size_t i) {
  static const char* syllables[] = {"ka", "lo", "mi", "ne", "su", "ta", "ro", "vi", "pe", "du",
                                    "za", "fo", "gi", "he", "ju", "bo", "ce", "wy", "xo", "qu"};
  std::string w;
  do {
    w += syllables[i % 20];
    i /= 20;
  } while (i > 0);
  return w + "n";
}

class Words {
public:
  explicit Words(unsigned seed) : rng_(seed) {}
  // Log-uniform over the vocabulary: word 0 is the most common.
  std::size_t pick() { return std::min(kVocabulary - 1, std::size_t(std::pow(double(kVocabulary), unit_(rng_))) - 1); }
  std::string text(std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.append(i ? " " : "").append(word(pick()));
    return out;
  }
  std::size_t between(std::size_t lo, std::size_t hi) { return lo + rng_() % (hi - lo + 1); }

private:
  std::mt19937 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
};

using acp::test_events::ev;
using acp::test_events::text;

// The same text with every word replaced by a stop word of the same length (the vocabulary's words are 3, 5,
// 7 or 9 letters): nothing to index, and the log lines keep their size to the byte, so a pair of writes
// differs only in what the indexer finds.
std::string unindexable(const std::string& text) {
  std::string out = text;
  std::size_t start = 0;
  while (start <= out.size()) {
    std::size_t end = out.find(' ', start);
    if (end == std::string::npos) end = out.size();
    const std::size_t n = end - start;
    const char* stop = n <= 3 ? "the" : n <= 5 ? "there" : n <= 7 ? "because" : "ourselves";
    const std::size_t m = std::min(n, std::strlen(stop));
    out.replace(start, m, stop, m);
    start = end + 1;
  }
  return out;
}

bool g_unindexable = false;

std::string say(Words& words, std::size_t n) {
  std::string t = words.text(n);
  return g_unindexable ? unindexable(t) : t;
}

// after_turn, when given, is called with each turn's append time (milliseconds) once that append returned.
void write_session(pg::PgStore& store, int i, Words& words, const std::string& prefix = "search-",
                   const std::function<void(double)>& after_turn = {}) {
  SessionHeader h;
  h.id = prefix + std::to_string(100000 + i);
  h.cwd = "/home/user/project-" + std::to_string(i % 20);
  h.createdAt = 1'700'000'000'000 + i;
  auto w = store.create(h);
  for (int n = 1; n <= 4; ++n) {
    const std::int64_t t = h.createdAt + n * 100;
    const std::string k = std::to_string(n);
    const auto began = Clock::now();
    w.append({ev("turn/start", {{"turn", n}}, t),
              ev("user/message", {{"turn", n}, {"content", text(say(words, words.between(8, 20)))}, {"id", "u" + k}}, t, true),
              ev("step/start", {{"turn", n}, {"step", 1}}, t + 1),
              ev("assistant/message",
                 {{"turn", n},
                  {"step", 1},
                  {"content", json::array{json::object{{"type", "tool-call"}, {"id", "c" + k}, {"name", "read"}, {"arguments", "{}"}}}},
                  {"id", "a" + k}},
                 t + 2, true),
              ev("tool/call",
                 {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"name", "read"},
                  {"arguments", "{\"path\":\"src/" + word(words.pick()) + ".cpp\"}"}},
                 t + 3),
              ev("tool/result",
                 {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"content", text(say(words, words.between(300, 500)))},
                  {"isError", false}, {"id", "t" + k}},
                 t + 4, true),
              ev("step/end", {{"turn", n}, {"step", 1}}, t + 5),
              ev("step/start", {{"turn", n}, {"step", 2}}, t + 6),
              ev("assistant/message", {{"turn", n}, {"step", 2}, {"content", text(say(words, words.between(30, 80)))}, {"id", "b" + k}},
                 t + 7, true),
              ev("step/end", {{"turn", n}, {"step", 2}}, t + 8),
              ev("turn/end", {{"turn", n}, {"reason", {{"kind", "completed"}}}}, t + 9)},
             n == 4);
    if (after_turn) after_turn(ms_since(began));
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_pg_search URL [SESSIONS]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int sessions = argc > 2 ? std::atoi(argv[2]) : 10000;
  // --query-only: the sessions are there already (an earlier run's database); only the questions.
  const bool query_only = argc > 3 && std::string(argv[3]) == "--query-only";
  pg::PgStoreOptions o;
  o.url = url;
  o.listen = false;
  pg::PgStore store(o);
  Words words(42);

  auto t0 = Clock::now();
  for (int i = 0; i < sessions && !query_only; ++i) write_session(store, i, words);
  const double write_s = ms_since(t0) / 1000;
  while (!store.wait_indexed(std::chrono::seconds(60))) {
  }
  const double indexed_s = ms_since(t0) / 1000;
  std::printf("pg search: %d sessions (4 turns, ~%zu texts each) written in %.1f s (%.0f sessions/s), all indexed %.1f s "
              "after the first\n",
              sessions, std::size_t(16), write_s, sessions / write_s, indexed_s);

  {
    pg::PgConnection c = pg::PgConnection::connect(url);
    c.exec("ANALYZE dsh_acp.search");
    pg::PgResult r = c.exec("SELECT pg_total_relation_size('dsh_acp.search'), pg_total_relation_size('dsh_acp.events'),"
                            " (SELECT count(*) FROM dsh_acp.search)");
    const double search_mb = double(r.int64(0, 0)) / 1e6, events_mb = double(r.int64(0, 1)) / 1e6;
    std::printf("  dsh_acp.search %.1f MB (%lld rows) beside dsh_acp.events %.1f MB: %.0f%%\n", search_mb,
                static_cast<long long>(r.int64(0, 2)), events_mb, 100 * search_mb / events_mb);
    bench::result("pgfts_size_pct", 100 * search_mb / events_mb, "%",
                  "\"note\":\"search " + std::to_string(int(search_mb)) + " MB, events " + std::to_string(int(events_mb)) + " MB\"");
  }

  // Questions: common words, rare words, and mixes, 1 to 4 words.
  Words ask(7);
  std::vector<std::string> questions;
  for (int i = 0; i < 200; ++i) {
    std::string q;
    const std::size_t n = 1 + std::size_t(i % 4);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t w = i % 3 == 0 ? ask.between(0, 50) : i % 3 == 1 ? ask.between(1000, kVocabulary - 1) : ask.pick();
      q.append(k ? " " : "").append(word(w));
    }
    questions.push_back(q);
  }
  std::vector<double> times, by_kind[3];
  std::size_t found = 0;
  for (int round = 0; round < 2; ++round) {  // the first round warms the cache; the second is timed
    times.clear();
    for (auto& k : by_kind) k.clear();
    found = 0;
    for (std::size_t i = 0; i < questions.size(); ++i) {
      ContentQuery cq;
      cq.words = questions[i];
      cq.limit = 10;
      auto t = Clock::now();
      found += store.search_content(cq).empty() ? 0 : 1;
      times.push_back(ms_since(t));
      by_kind[i % 3].push_back(times.back());
    }
  }
  const double p50 = percentile(times, 0.5), p95 = percentile(times, 0.95);
  std::printf("  search_content: p50 %.2f ms, p95 %.2f ms, max %.2f ms over %zu questions (%zu found something)\n", p50, p95,
              percentile(times, 1.0), questions.size(), found);
  const char* kinds[] = {"only common words (the 50 most frequent)", "rare words", "words of any frequency"};
  for (int k = 0; k < 3; ++k)
    std::printf("    %s: p50 %.2f ms, p95 %.2f ms\n", kinds[k], percentile(by_kind[k], 0.5), percentile(by_kind[k], 0.95));
  bench::result("pgfts_query_p95_ms", p95, "ms", "\"note\":\"p50 " + std::to_string(p50) + " ms, " + std::to_string(sessions) + " sessions\"");

  {
    // The write path's share: the same sessions with and without texts to index (stop words only:
    // the indexer then finds no words), 12 rounds of 20 each, the order alternating; the growth is
    // the median of the rounds' paired ratios (a pair shares the machine's load of the moment). The
    // indexer's work competes with the writer inside a round; its backlog is waited for, unmeasured,
    // after each half.
    constexpr int kRounds = 12, kPerRound = 20;
    std::vector<double> with, without, ratios;
    for (int round = 0; round < kRounds; ++round) {
      double took[2] = {0, 0};
      for (bool texts : {round % 2 == 0, round % 2 != 0}) {
        g_unindexable = !texts;
        Words w(1000 + unsigned(round));
        const auto t = Clock::now();
        // Ids of this run's own: a --query-only rerun writes beside an earlier run's.
        const std::string prefix = (texts ? "ab-with-" : "ab-without-") + std::to_string(::getpid()) + "-";
        for (int i = 0; i < kPerRound; ++i) write_session(store, round * kPerRound + i, w, prefix);
        took[texts] = ms_since(t) / kPerRound;
        (texts ? with : without).push_back(took[texts]);
        while (!store.wait_indexed(std::chrono::seconds(60))) {
        }
      }
      ratios.push_back(took[1] / took[0]);
    }
    g_unindexable = false;
    const double a = percentile(with, 0.5), b = percentile(without, 0.5), growth = 100 * (percentile(ratios, 0.5) - 1);
    std::printf("  a session's 4 turns written: %.2f ms with its texts, %.2f ms without (medians of %d rounds of %d): "
                "%+.1f%% (median of the paired rounds; they ranged %+.0f%% to %+.0f%%)\n",
                a, b, kRounds, kPerRound, growth, 100 * (percentile(ratios, 0.0) - 1), 100 * (percentile(ratios, 1.0) - 1));
    bench::result("pgfts_write_growth_pct", growth, "%", "\"note\":\"a session of 4 turns, with vs without texts\"");
  }

  {
    // The same at a prompt's pace: each session's write is timed alone, and the indexer's backlog is
    // waited for (unmeasured) before the next one, as between two prompts, whose round trips include
    // the model's answer. The cost on the prompt's own path: what a person waiting for a turn sees.
    constexpr int kRounds = 12, kPerRound = 10;
    std::vector<double> ratios;
    for (int round = 0; round < kRounds; ++round) {
      double took[2] = {0, 0};
      for (bool texts : {round % 2 == 0, round % 2 != 0}) {
        g_unindexable = !texts;
        Words w(5000 + unsigned(round));
        const std::string prefix = (texts ? "paced-with-" : "paced-without-") + std::to_string(::getpid()) + "-";
        std::vector<double> each;
        for (int i = 0; i < kPerRound; ++i) {
          const auto t = Clock::now();
          write_session(store, round * kPerRound + i, w, prefix);
          each.push_back(ms_since(t));
          while (!store.wait_indexed(std::chrono::seconds(60))) {
          }
        }
        took[texts] = percentile(each, 0.5);
      }
      ratios.push_back(took[1] / took[0]);
    }
    g_unindexable = false;
    const double growth = 100 * (percentile(ratios, 0.5) - 1);
    std::printf("  at a prompt's pace (the indexer idle when a session's write starts): %+.1f%% (median of %d paired "
                "rounds; they ranged %+.0f%% to %+.0f%%)\n",
                growth, kRounds, 100 * (percentile(ratios, 0.0) - 1), 100 * (percentile(ratios, 1.0) - 1));
    bench::result("pgfts_write_growth_paced_pct", growth, "%",
                  "\"note\":\"a session of 4 turns, with vs without texts, the indexer's backlog waited for between sessions\"");
  }

  {
    // One prompt's own write: each turn's append timed alone, the indexer's backlog waited for
    // (unmeasured) before the next turn, as it is in a session whose turns wait for a model's answer.
    // A turn's append is the store's share of a prompt round trip; the pair of rounds writes lines of
    // the same sizes, with and without words to index.
    constexpr int kRounds = 12, kPerRound = 10;
    std::vector<double> with, without, ratios;
    for (int round = 0; round < kRounds; ++round) {
      double took[2] = {0, 0};
      for (bool texts : {round % 2 == 0, round % 2 != 0}) {
        g_unindexable = !texts;
        Words w(9000 + unsigned(round));
        const std::string prefix = (texts ? "turn-with-" : "turn-without-") + std::to_string(::getpid()) + "-";
        std::vector<double> each;
        for (int i = 0; i < kPerRound; ++i)
          write_session(store, round * kPerRound + i, w, prefix, [&](double ms) {
            each.push_back(ms);
            while (!store.wait_indexed(std::chrono::seconds(60))) {
            }
          });
        took[texts] = percentile(each, 0.5);
        (texts ? with : without).push_back(took[texts]);
      }
      ratios.push_back(took[1] / took[0]);
    }
    g_unindexable = false;
    const double growth = 100 * (percentile(ratios, 0.5) - 1);
    std::printf("  a turn's append at a prompt's pace: %.3f ms with words to index, %.3f ms without (medians); %+.1f%% "
                "(median of %d paired rounds of %d turns; they ranged %+.0f%% to %+.0f%%)\n",
                percentile(with, 0.5), percentile(without, 0.5), growth, kRounds, kPerRound * 4,
                100 * (percentile(ratios, 0.0) - 1), 100 * (percentile(ratios, 1.0) - 1));
    bench::result("pgfts_turn_growth_paced_pct", growth, "%",
                  "\"note\":\"a turn's append, with vs without words to index, the indexer's backlog waited for between turns\"");
  }

  {
    // Freshness: a turn with a word of its own appended to a session; then searched for from another
    // store (another process's view: found once the writer's indexer committed its texts), and from
    // the writer's store (which waits for its indexer first), alternating, 20 each.
    pg::PgStore other(o);
    std::vector<double> elsewhere, here;
    SessionHeader h;
    h.id = "fresh-" + std::to_string(::getpid());
    h.createdAt = 1'800'000'000'000;
    auto w = store.create(h);
    Words fill(99);
    for (int n = 1; n <= 40; ++n) {
      const std::string marker = "freshmark" + word(std::size_t(n) * 7919 % kVocabulary);
      const std::int64_t t = h.createdAt + n * 100;
      const std::string k = std::to_string(n);
      w.append({ev("turn/start", {{"turn", n}}, t),
                ev("user/message", {{"turn", n}, {"content", text(marker + " " + fill.text(12))}, {"id", "u" + k}}, t, true)},
               true);
      const auto committed = Clock::now();
      ContentQuery cq;
      cq.words = marker;
      cq.limit = 1;
      pg::PgStore& asker = n % 2 ? other : store;
      while (asker.search_content(cq).empty()) {
      }
      (n % 2 ? elsewhere : here).push_back(ms_since(committed));
      w.append({ev("turn/end", {{"turn", n}, {"reason", {{"kind", "completed"}}}}, t + 1)}, true);
    }
    std::printf("  a turn committed -> found by a search: median %.2f ms from another store (max %.2f), %.2f ms from the "
                "writer's own (max %.2f), 20 each\n",
                percentile(elsewhere, 0.5), percentile(elsewhere, 1.0), percentile(here, 0.5), percentile(here, 1.0));
    bench::result("pgfts_fresh_ms", percentile(elsewhere, 0.5), "ms",
                  "\"note\":\"median, another store; the writer's own " + std::to_string(percentile(here, 0.5)) + " ms\"");
  }

  if (query_only) return 0;
  std::vector<double> scans;
  for (int i = 0; i < 2; ++i) {
    ContentQuery cq;
    cq.words = questions[std::size_t(i)];
    auto t = Clock::now();
    store.Backend::search_content(cq);
    scans.push_back(ms_since(t));
  }
  std::printf("  plain scan of the logs (Backend::search_content): %.0f ms, %.0f ms\n", scans[0], scans[1]);
  bench::result("pgfts_scan_ms", percentile(scans, 1.0), "ms", "\"note\":\"the default, for comparison\"");

  {
    // Texts dropped as an older dsh-acp would have left them; the role's own rows only.
    pg::PgConnection c = pg::PgConnection::connect(url);
    c.exec("DELETE FROM dsh_acp.search");
    c.exec("UPDATE dsh_acp.sessions SET indexed_count = 0");
  }
  t0 = Clock::now();
  IndexProgress p = store.index_content();
  const double backfill_s = ms_since(t0) / 1000;
  std::printf("  index_content backfill: %zu of %zu sessions in %.1f s (%.0f sessions/s)\n", p.indexed, p.total, backfill_s,
              double(p.indexed) / backfill_s);
  bench::result("pgfts_backfill_s", backfill_s, "s", "\"note\":\"" + std::to_string(p.indexed) + " sessions\"");
  return 0;
}
