// bench_prepare: the in-memory prepare figure of docs/decisions.md#benchmarks.
//
// For N = 1k … 1M messages of 200 bytes in one source already in memory (a folded SurfaceSnapshot, as
// the store hands it over), it times render_context(): projection + retention under the default
// 65,536-byte budget + serialization of the prompt and the source record. Building the snapshot and
// reading it from a store are not included (the end-to-end figure, read + fold + prepare from a stored
// log, is bench_prepare_e2e). Each size is run several times; the minimum is the figure
// least disturbed by other processes on a shared machine, and the median is printed beside it. The
// growth exponent is the log-log slope of the minimum time against N: 1.0 is linear, the original's
// retention is ~2. The 1-minute load average is printed so a noisy run can be recognised.
#include "refs/service.hpp"
#include "refs/work_counter.hpp"

#include "bench_result.hpp"

#include <boost/json.hpp>
#include <boost/json/monotonic_resource.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <stdlib.h>

namespace json = boost::json;

namespace {

acp::store::SurfaceSnapshot make_source(std::size_t messages, const json::storage_ptr& storage) {
  acp::store::SurfaceSnapshot s;
  s.session.id = "bench-source";
  s.session.cwd = "/bench";
  s.capturedThroughSeq = static_cast<std::int64_t>(messages) - 1;
  s.events.reserve(messages);
  for (std::size_t i = 0; i < messages; ++i) {
    std::string text = "message " + std::to_string(i) + " ";
    text.resize(200, i % 2 ? 'a' : 'u');  // 200 bytes of text per message
    bool user = i % 2 == 0;
    json::object data(storage);
    data["content"] = json::array({json::object({{"type", "text"}, {"text", text}}, storage)}, storage);
    if (user) data["source"] = json::object({{"kind", "user"}}, storage);
    json::object event(storage);
    event["type"] = user ? "user/message" : "assistant/message";
    event["seq"] = static_cast<std::int64_t>(i);
    event["time"] = 1700000000000 + static_cast<std::int64_t>(i);
    event["data"] = std::move(data);
    event["surfaceOp"] = "append";
    s.events.push_back(std::move(event));
  }
  return s;
}

} // namespace

int main() {
  const std::vector<std::size_t> sizes{1'000, 4'000, 16'000, 64'000, 256'000, 1'000'000};
  const std::vector<acp::refs::NormalizedReference> refs{{"bench-source", "bench"}};
  std::printf("prepare (in memory): projection + retention (maxReferenceBytes 65536) + serialization of one source\n");
  std::printf("already in memory; N messages of 200 bytes; excludes building/reading the snapshot.\n");
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) std::printf("load average (1 min) at start: %.2f\n", load[0]);
  std::printf("\n%10s %6s %10s %12s %10s %10s %12s %8s\n", "messages", "runs", "min ms", "median ms", "ns/msg", "MB/s",
              "work units", "omitted");
  std::vector<double> xs, ys;
  for (std::size_t n : sizes) {
    json::storage_ptr storage = json::make_shared_resource<json::monotonic_resource>();
    std::vector<acp::store::SurfaceSnapshot> snapshots;
    snapshots.push_back(make_source(n, storage));
    const int runs = n <= 16'000 ? 21 : n <= 256'000 ? 7 : 5;
    std::vector<double> ms;
    acp::refs::WorkCounter work;
    std::int64_t omitted = 0;
    for (int r = 0; r < runs; ++r) {
      acp::refs::WorkCounter counter;
      auto start = std::chrono::steady_clock::now();
      acp::refs::AdditionalContext ctx = acp::refs::render_context(refs, snapshots, 65536, &counter);
      auto stop = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
      work = counter;
      omitted = ctx.source.at("references").at(0).at("omittedMessages").as_int64();
    }
    std::sort(ms.begin(), ms.end());
    double best = ms.front();
    double median = ms[ms.size() / 2];
    double mb = static_cast<double>(n) * 200.0 / 1e6;
    std::printf("%10zu %6d %10.3f %12.3f %10.1f %10.1f %12llu %8lld\n", n, runs, best, median,
                best * 1e6 / static_cast<double>(n), mb / (best / 1e3), static_cast<unsigned long long>(work.total()),
                static_cast<long long>(omitted));
    if (n == 64'000) bench::result("prepare_mem_64k_ms", best, "ms");
    xs.push_back(std::log(static_cast<double>(n)));
    ys.push_back(std::log(best));
  }
  std::printf("\ngrowth exponent (log-log slope of minimum time against N):\n");
  for (std::size_t i = 1; i < xs.size(); ++i)
    std::printf("  %zu -> %zu: %.3f\n", sizes[i - 1], sizes[i], (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1]));
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) mx += xs[i], my += ys[i];
  mx /= static_cast<double>(xs.size());
  my /= static_cast<double>(ys.size());
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) sxy += (xs[i] - mx) * (ys[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
  std::printf("  least squares 1k..1M: %.3f (target <= 1.1)\n", sxy / sxx);
  bench::result("prepare_mem_growth_exponent", sxy / sxx, "");
  std::printf("\nprepare (end to end from a stored log): see bench_prepare_e2e.\n");
  return 0;
}
