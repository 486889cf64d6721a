// bench_store: the listing / candidate index figures of contracts §6 over 10,000 stored sessions.
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
// Each figure is the median of several runs. Nothing here is asserted.
#include "store/layout.hpp"
#include "store/session_store.hpp"

#include "bench_result.hpp"

#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using acp::store::Encoding;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
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

void write_store(const std::string& root, Encoding enc, int n) {
  fs::create_directories(root);
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::replace);
  for (int i = 0; i < n; ++i) {
    std::string cwd = "/home/user/project-" + std::to_string(i % 20);
    std::string id = "bench-" + std::to_string(1000000 + i);
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

  acp::store::StoreOptions opts{root, enc, cache, std::chrono::milliseconds(2000)};
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

} // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  std::string base = (fs::temp_directory_path() / ("dsh-bench-store-" + std::to_string(::getpid()))).string();
  fs::create_directories(base);
  std::printf("bench_store: listing index over stored sessions (store library, no ACP process)\n");
  run(Encoding::zstd, n, base);
  run(Encoding::none, n, base);
  fs::remove_all(base);
  return 0;
}
