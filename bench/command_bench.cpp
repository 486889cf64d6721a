// bench_command: the cost of a local `bash -c true` tool call (issue 27) in the server's own code
// path (tools::run_command: spawn, await the exit, reap, sweep for orphans), with the Landlock
// sandbox set up (a ruleset for one root and the temporary directories, enforced in the child)
// beside the same call unconfined, in one run, interleaved so machine load hits both alike.
//   wall   run_command start -> outcome, median of RUNS (BENCH_COMMAND_RUNS, default 200)
//   CPU    this process's user + system time over all calls / calls, and the children's (bash's
//          start-up and the sandbox's enforcement in the child), from getrusage; far less disturbed
//          by other work on a shared machine than the wall figure
// Also: building the ruleset alone (the parent's share of the set-up) and an orphan sweep that
// finds none (every call ends with one), medians.
#include "bench_result.hpp"

#include "support/child_process.hpp"
#include "support/sandbox.hpp"
#include "tools/command.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

double cpu_ms(int who = RUSAGE_SELF) {
  rusage u;
  ::getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One call; its wall time in ms.
double one_call(boost::asio::io_context& io, const std::string& root, bool sandboxed) {
  acp::tools::CommandRequest req{"true"};
  req.workdir = root;
  if (sandboxed) req.writable_roots = {root};
  std::optional<acp::tools::CommandOutcome> out;
  auto t0 = Clock::now();
  boost::asio::co_spawn(io, acp::tools::run_command(std::move(req)),
                        [&](std::exception_ptr e, acp::tools::CommandOutcome o) {
                          if (e) std::rethrow_exception(e);
                          out = std::move(o);
                        });
  io.restart();
  io.run();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!out || out->exit_code.value_or(-1) != 0) {
    std::fprintf(stderr, "bench_command: `true` failed: %s\n", out ? out->output.c_str() : "no outcome");
    std::exit(1);
  }
  return ms;
}

} // namespace

int main() {
  const int runs = std::getenv("BENCH_COMMAND_RUNS") ? std::atoi(std::getenv("BENCH_COMMAND_RUNS")) : 200;
  std::string root = std::filesystem::temp_directory_path() / ("dsh-command-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  acp::support::adopt_orphans();  // as the server does
  std::printf("bash -c true through run_command, sandbox %s%s\n", acp::support::sandbox_name(),
              acp::support::sandbox_missing_reason().empty() ? "" : (" (" + acp::support::sandbox_missing_reason() + ")").c_str());
  boost::asio::io_context io;
  one_call(io, root, true);
  one_call(io, root, false);
  std::vector<double> with, without, rules;
  std::vector<double> sweeps;
  double cpu_with = 0, cpu_without = 0, kids_with = 0, kids_without = 0;
  for (int i = 0; i < runs; ++i) {
    double c0 = cpu_ms(), k0 = cpu_ms(RUSAGE_CHILDREN);
    with.push_back(one_call(io, root, true));
    double c1 = cpu_ms(), k1 = cpu_ms(RUSAGE_CHILDREN);
    without.push_back(one_call(io, root, false));
    double c2 = cpu_ms(), k2 = cpu_ms(RUSAGE_CHILDREN);
    cpu_with += c1 - c0;
    cpu_without += c2 - c1;
    kids_with += k1 - k0;
    kids_without += k2 - k1;
    auto s0 = Clock::now();
    boost::asio::co_spawn(io, acp::support::kill_orphans(), [](std::exception_ptr) {});
    io.restart();
    io.run();
    sweeps.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s0).count());
    auto t0 = Clock::now();
    std::vector<std::string> writable{root};
    for (auto& d : acp::support::temporary_directories()) writable.push_back(d);
    int fd = acp::support::write_confinement(writable);
    rules.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (fd >= 0) ::close(fd);
  }
  std::filesystem::remove_all(root);
  const double w = median(with), wo = median(without), r = median(rules);
  std::printf("  wall, median of %d:  %.3f ms sandboxed, %.3f ms unconfined (+%.3f ms)\n", runs, w, wo, w - wo);
  std::printf("  our CPU per call:    %.3f ms sandboxed, %.3f ms unconfined\n", cpu_with / runs, cpu_without / runs);
  std::printf("  children's CPU:      %.3f ms sandboxed, %.3f ms unconfined\n", kids_with / runs, kids_without / runs);
  std::printf("  ruleset built alone: %.3f ms, an orphan sweep finding none: %.3f ms (medians)\n", r, median(sweeps));
  char note[300];
  std::snprintf(note, sizeof note,
                "\"note\":\"%.3f ms unconfined (+%.3f ms); CPU ours+children %.3f ms sandboxed, %.3f unconfined; sandbox %s\"",
                wo, w - wo, (cpu_with + kids_with) / runs, (cpu_without + kids_without) / runs, acp::support::sandbox_name());
  bench::result("bash_true_call_ms", w, "ms", note);
  std::snprintf(note, sizeof note, "\"note\":\"ruleset %.3f ms of it\"", r);
  bench::result("bash_true_sandbox_added_ms", w - wo, "ms", note);
  return 0;
}
