// bench_store: the listing / candidate index figures of docs/decisions.md#benchmarks over 10,000 stored sessions.
//
// Builds a temporary store of N sessions (default 10,000; argv[1] overrides) spread over 20 cwd
// buckets, each log a small complete harness turn with a title, written directly (raw and zstd,
// one frame for the header and one for the turn, checksums on), then measures through the store
// library (no ACP process):
//   rebuild  SessionStore::rebuild_index(): forget everything, re-read every log's header, title,
//            times and size (file cache warm: the logs were just written)
//   cold     a new SessionStore over the root with the index file present (load the cache file,
//            sweep every bucket by size+mtime) plus the first session/list page (100 rows)
//   warm     list_sessions() of the first page (100 of 10,000, cwd filter off) and a full
//            visit of all 10,000 rows (what candidate search walks) on an index already in memory
// Then the same 10,000 sessions split over two roots of both generations (issue 15): a 45fc raw
// root and a 0.1 zstd root (0.1 layout, 0.1.1 shapes), sessions alternating between them, one
// store::StoreSet over both as the server builds it for `--store A --store B`:
//   cold     two new SessionStore objects (each loads its index file and sweeps its buckets or
//            project and session directories) plus the first merged page
//   warm     StoreSet::list_sessions() of the first page on indexes already in memory
// Each figure is the median of several runs. Nothing here is asserted.
#include "store/layout.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"

#include "bench_result.hpp"

#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
using acp::store::Encoding;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this process (user + system), ms: what a loaded machine disturbs least.
double cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string frame(const std::string& plain) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  size_t n = ZSTD_compress2(cctx, out.data(), out.size(), plain.data(), plain.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(n)) std::abort();
  out.resize(n);
  return out;
}

// Session i of the stores below: cwd, id, createdAt.
std::string cwd_of(int i) { return "/home/user/project-" + std::to_string(i % 20); }
std::string id_of(int i) { return "bench-" + std::to_string(1000000 + i); }

// Creates `dir` and its missing parents below `root` with mode 0700.
void make_dirs(const std::string& root, const std::string& dir) {
  if (fs::exists(dir)) return;
  fs::create_directories(dir);
  for (std::string d = dir; d.size() > root.size(); d = d.substr(0, d.rfind('/')))
    fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace);
}

// The same small finished session in 0.1.1 shapes and the 0.1 layout (docs/store-format.md#release-011-shapes).
void write_v01_log(const std::string& root, Encoding enc, int i) {
  const std::string cwd = cwd_of(i), id = id_of(i);
  long long created = 1700000000000LL + i * 1000LL;
  std::string ts = std::to_string(created + 10);
  std::string header = "{\"type\":\"session\",\"version\":0,\"id\":\"" + id + "\",\"createdAt\":" +
                       std::to_string(created) + ",\"cwd\":\"" + cwd + "\",\"delegationDepth\":0}\n";
  std::string text = "please look at module " + std::to_string(i) + " and explain the failing test";
  char mid[40];
  std::snprintf(mid, sizeof mid, "%08x-0000-4000-8000-%012x", unsigned(i), 0u);
  std::string turn =
      "{\"type\":\"turn/start\",\"seq\":0,\"time\":" + ts + ",\"data\":{\"turn\":1}}\n"
      "{\"type\":\"step/start\",\"seq\":1,\"time\":" + ts + ",\"data\":{\"turn\":1,\"step\":1}}\n"
      "{\"type\":\"user/message\",\"seq\":2,\"time\":" + ts + ",\"data\":{\"content\":[{\"type\":\"text\",\"text\":\"" +
      text + "\"}],\"source\":{\"kind\":\"user\"},\"role\":\"user\",\"id\":\"" + mid + "\"},\"surfaceOp\":\"append\"}\n"
      "{\"type\":\"session/title\",\"seq\":3,\"time\":" + ts +
      ",\"data\":{\"title\":\"please look at module " + std::to_string(i) +
      "\",\"messageSeqs\":[2],\"source\":{\"kind\":\"fallback\"}}}\n"
      "{\"type\":\"step/end\",\"seq\":4,\"time\":" + ts + ",\"data\":{\"turn\":1,\"step\":1}}\n"
      "{\"type\":\"turn/end\",\"seq\":5,\"time\":" + ts + ",\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}}\n";
  const std::string dir = root + "/" + acp::store::session_dir(acp::store::Generation::project_dirs, cwd, id);
  make_dirs(root, dir);
  std::ofstream f(dir + "/" + acp::store::v01_log_name(enc), std::ios::binary);
  if (enc == Encoding::none) f << header << turn;
  else f << frame(header) << frame(turn);
}

void write_store(const std::string& root, Encoding enc, int n, int first = 0, int step = 1) {
  fs::create_directories(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  for (int i = first; i < n; i += step) {
    std::string cwd = cwd_of(i);
    std::string id = id_of(i);
    long long created = 1700000000000LL + i * 1000LL;
    long long t = created + 10;
    std::string header = "{\"type\":\"session\",\"version\":0,\"id\":\"" + id + "\",\"createdAt\":" +
                         std::to_string(created) + ",\"cwd\":\"" + cwd + "\",\"delegationDepth\":0}\n";
    std::string ts = std::to_string(t);
    std::string text = "please look at module " + std::to_string(i) + " and explain the failing test";
    std::string turn =
        "{\"type\":\"turn/start\",\"seq\":0,\"time\":" + ts +
        ",\"data\":{\"turn\":1,\"trigger\":{\"kind\":\"message\",\"source\":{\"kind\":\"user\"}}}}\n"
        "{\"type\":\"user/message\",\"seq\":1,\"time\":" + ts + ",\"data\":{\"content\":[{\"type\":\"text\",\"text\":\"" +
        text + "\"}],\"source\":{\"kind\":\"user\"}},\"surfaceOp\":\"append\"}\n"
        "{\"type\":\"session/title\",\"seq\":2,\"time\":" + ts +
        ",\"data\":{\"title\":\"please look at module " + std::to_string(i) +
        "\",\"messageSeqs\":[1],\"source\":{\"kind\":\"fallback\"}}}\n"
        "{\"type\":\"turn/end\",\"seq\":3,\"time\":" + ts + ",\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}}\n";
    std::string dir = root + "/" + acp::store::bucket_name(cwd);
    if (!fs::exists(dir)) {
      fs::create_directory(dir);
      fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    }
    std::ofstream f(dir + "/" + acp::store::log_file_name(id, enc), std::ios::binary);
    if (enc == Encoding::none) f << header << turn;
    else f << frame(header) << frame(turn);
  }
}

void run(Encoding enc, int n, const std::string& base) {
  std::string root = base + "/" + std::string(acp::store::encoding_name(enc)) + "/sessions";
  std::string cache = base + "/" + std::string(acp::store::encoding_name(enc)) + "/cache";
  auto t_write = Clock::now();
  write_store(root, enc, n);
  double wrote = ms_since(t_write);

  acp::store::StoreOptions opts{root, enc, cache, std::chrono::milliseconds(2000), std::nullopt};
  acp::store::ListQuery page;
  page.with_cwd_only = true;
  page.limit = 101;

  // rebuild: first start-up has no cache file (a full sweep), then rebuild_index() runs.
  std::vector<double> rebuild;
  {
    acp::store::SessionStore store(opts);
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      store.rebuild_index();
      rebuild.push_back(ms_since(t0));
    }
    store.flush_index();
  }
  // cold: a new store object (as in a new process) with the index file present.
  std::vector<double> cold;
  std::size_t rows = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    acp::store::SessionStore store(opts);
    rows = store.list_sessions(page).size();
    cold.push_back(ms_since(t0));
  }
  // warm: index in memory, nothing changed.
  acp::store::SessionStore store(opts);
  store.list_sessions(page);
  std::vector<double> warm_page, warm_all;
  std::size_t visited = 0;
  for (int r = 0; r < 20; ++r) {
    auto t0 = Clock::now();
    rows = store.list_sessions(page).size();
    warm_page.push_back(ms_since(t0));
    t0 = Clock::now();
    visited = 0;
    store.visit_sessions({}, [&](const acp::store::SessionListing& l) {
      visited += l.title ? 1 : 0;
      return true;
    });
    warm_all.push_back(ms_since(t0));
  }
  std::printf("store index, %d sessions in 20 buckets, %s logs (written in %.0f ms):\n", n,
              enc == Encoding::zstd ? "zstd" : "raw JSONL", wrote);
  std::printf("  rebuild (forget the index, re-read every log's header/title/times/size; page cache warm), median of 3: "
              "%.1f ms (target <= 2000 ms)\n", median(rebuild));
  std::printf("  cold (new store object, index file present: load it + size/mtime sweep of every bucket + first page "
              "of %zu rows), median of 5: %.1f ms (target <= 100 ms)\n", rows > 100 ? std::size_t(100) : rows, median(cold));
  std::printf("  warm session/list page (100 rows of %d, index in memory, nothing changed; includes the bucket mtime "
              "check), median of 20: %.3f ms (target <= 5 ms)\n", n, median(warm_page));
  std::printf("  warm candidate walk (visit all %zu rows in listing order, no copies), median of 20: %.3f ms (target <= 5 ms)\n",
              visited, median(warm_all));
  const std::string enc_name = enc == Encoding::zstd ? "zstd" : "raw";
  bench::result("lib_list_rebuild_" + enc_name + "_ms", median(rebuild), "ms");
  bench::result("lib_list_cold_" + enc_name + "_ms", median(cold), "ms");
  bench::result("lib_list_warm_" + enc_name + "_ms", median(warm_page), "ms");
}

// The 10,000 sessions split over a 45fc raw root (even i) and a 0.1 zstd root (odd i), one
// StoreSet over both as the server builds it for `--store A --store B`.
void run_two_roots(int n, const std::string& base) {
  const std::string a = base + "/two/sessions-45fc", b = base + "/two/sessions-01", cache = base + "/two/cache";
  auto t_write = Clock::now();
  write_store(a, Encoding::none, n, 0, 2);
  fs::create_directories(b);
  fs::permissions(b, fs::perms::owner_all, fs::perm_options::replace);
  for (int i = 1; i < n; i += 2) write_v01_log(b, Encoding::zstd, i);
  double wrote = ms_since(t_write);
  auto open = [&] {
    std::vector<std::unique_ptr<acp::store::Backend>> roots;
    roots.push_back(std::make_unique<acp::store::SessionStore>(
        acp::store::StoreOptions{a, Encoding::none, cache, std::chrono::milliseconds(2000), std::nullopt}));
    roots.push_back(std::make_unique<acp::store::SessionStore>(
        acp::store::StoreOptions{b, Encoding::zstd, cache, std::chrono::milliseconds(2000), std::nullopt}));
    return acp::store::StoreSet(std::move(roots));
  };
  acp::store::ListQuery page;
  page.with_cwd_only = true;
  page.limit = 101;
  {
    auto set = open();  // first start-up: no index files, a full sweep of both roots; then they are written
    for (auto& r : set.roots()) r->flush();
  }
  std::vector<double> cold, cold_cpu;
  std::size_t rows = 0, from_01 = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    const double c0 = cpu_ms();
    auto set = open();
    auto listed = set.list_sessions(page);
    cold.push_back(ms_since(t0));
    cold_cpu.push_back(cpu_ms() - c0);
    rows = listed.size();
    from_01 = 0;
    for (std::size_t k = 0; k < std::min<std::size_t>(rows, 100); ++k) from_01 += (std::stoi(listed[k].header.id.substr(6)) % 2);
  }
  auto set = open();
  set.list_sessions(page);
  std::vector<double> warm;
  for (int r = 0; r < 20; ++r) {
    auto t0 = Clock::now();
    rows = set.list_sessions(page).size();
    warm.push_back(ms_since(t0));
  }
  if (set.roots()[1]->generation() != acp::store::Generation::project_dirs) std::abort();
  std::printf("store index, %d sessions split over two roots (a 45fc raw root in 20 cwd buckets and a 0.1 zstd root in 20 "
              "project directories, alternating; written in %.0f ms), one StoreSet:\n", n, wrote);
  std::printf("  cold (two new store objects, index files present: load both + sweep every bucket and session "
              "directory + first merged page of 100 rows, %zu of them from the 0.1 root), median of 5: %.1f ms, "
              "CPU %.1f ms (target <= 100 ms)\n", from_01, median(cold), median(cold_cpu));
  std::printf("  warm merged session/list page (100 rows of %d, indexes in memory), median of 20: %.3f ms (target <= 5 ms)\n",
              n, median(warm));
  bench::result("lib_list2_cold_ms", median(cold), "ms",
                "\"note\":\"CPU " + std::to_string(int(median(cold_cpu) + 0.5)) + " ms\"");
  bench::result("lib_list2_warm_ms", median(warm), "ms");
}

} // namespace

int main(int argc, char** argv) {
  // bench_store [N] [--two-roots]: N sessions (10,000); --two-roots: only the two-root figures.
  int n = 10000;
  bool two_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--two-roots") two_only = true;
    else n = std::atoi(argv[i]);
  }
  std::string base = (fs::temp_directory_path() / ("dsh-bench-store-" + std::to_string(::getpid()))).string();
  fs::create_directories(base);
  std::printf("bench_store: listing index over stored sessions (store library, no ACP process)\n");
  if (!two_only) {
    run(Encoding::zstd, n, base);
    run(Encoding::none, n, base);
  }
  run_two_roots(n, base);
  fs::remove_all(base);
  return 0;
}
