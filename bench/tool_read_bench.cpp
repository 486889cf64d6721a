// bench_tool_read: issue 27's figure for `read`: what a tool call costs for a 4 KiB file now that
// paths are opened beneath the root's descriptor, beside the resolution by name it replaced.
//
// A root holding src/a/b/c/file.txt (4,096 bytes, 64 lines). Each figure is the minimum over --runs
// of the mean over --calls calls, wall time on this thread:
//  - read call: ToolRunner::run("read") awaited on an io_context with the file work on a one-thread
//    pool, as the engine runs it: arguments parsed, the hop to the pool and back, resolution, open,
//    read, the numbered window. With openat2 (RESOLVE_BENEATH) and with the component walk.
//  - resolution alone: Roots::open of the file and close (descriptor), beside realpath() then
//    open() by name (resolution by name: an lstat per component, then the kernel's own walk again).
// Built against a tree without tools/beneath.hpp (main before issue 27) only the read call is
// measured, and it is labelled "by name": bench/README.md's figure for main was taken that way.
// Usage: bench_tool_read [--calls N] [--runs R]
#include "engine/tool_runner.hpp"
#include "tools/roots.hpp"

#include "bench_result.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#if __has_include("tools/beneath.hpp")
#define DESCRIPTOR_RESOLUTION 1
#endif

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace acp;
using Clock = std::chrono::steady_clock;

namespace {

double best_mean_us(int runs, int calls, const std::function<void()>& call) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
  }
  return best;
}

double read_call_us(tools::Roots roots, int runs, int calls) {
  asio::io_context io;
  asio::thread_pool pool(1);
  engine::ToolRunner runner(std::move(roots), {}, pool.get_executor());
  std::size_t shown = 0;
  auto call = [&] {
    asio::co_spawn(io, runner.run("read", R"({"file_path":"src/a/b/c/file.txt"})"),
                   [&](std::exception_ptr e, engine::ToolOutcome out) {
                     if (e || out.is_error) {
                       std::fprintf(stderr, "read failed: %s\n", out.text.c_str());
                       std::exit(1);
                     }
                     shown += out.text.size();
                   });
    io.restart();
    io.run();
  };
  double us = best_mean_us(runs, calls, call);
  pool.join();
  return us;
}

} // namespace

int main(int argc, char** argv) {
  int calls = 2000, runs = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  std::string tmpl = (fs::temp_directory_path() / "bench-tool-read-XXXXXX").string();
  const fs::path root = fs::canonical(::mkdtemp(tmpl.data()));
  fs::create_directories(root / "src/a/b/c");
  const fs::path file = root / "src/a/b/c/file.txt";
  {
    std::ofstream out(file, std::ios::binary);
    for (int line = 0; line < 64; ++line) out << std::string(63, char('a' + line % 26)) << '\n';
  }
  std::printf("bench_tool_read: `read` of a 4,096-byte file 4 directories below the root (%s), mean of %d calls, "
              "minimum of %d runs\n",
              root.c_str(), calls, runs);
#ifdef DESCRIPTOR_RESOLUTION
  const double kernel_call = read_call_us(tools::Roots(root.string()), runs, calls);
  const double walk_call = read_call_us(tools::Roots(root.string(), {}, tools::Resolution::component_walk), runs, calls);
  tools::Roots roots(root.string());
  tools::Roots walking(root.string(), {}, tools::Resolution::component_walk);
  const double kernel_open = best_mean_us(runs, calls * 5, [&] { roots.open("src/a/b/c/file.txt", O_RDONLY); });
  const double walk_open = best_mean_us(runs, calls * 5, [&] { walking.open("src/a/b/c/file.txt", O_RDONLY); });
  const std::string path = file.string();
  const double by_name_open = best_mean_us(runs, calls * 5, [&] {
    char* real = ::realpath(path.c_str(), nullptr);
    int fd = ::open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ::close(fd);
    std::free(real);
  });
  std::printf("  read call, beneath the root's descriptor (openat2):  %8.1f us\n", kernel_call);
  std::printf("  read call, beneath it by the component walk:         %8.1f us\n", walk_call);
  std::printf("  resolution + open alone, openat2:                    %8.2f us\n", kernel_open);
  std::printf("  resolution + open alone, component walk:             %8.2f us\n", walk_open);
  std::printf("  resolution + open alone, by name (realpath + open):  %8.2f us\n", by_name_open);
  bench::result("tool_read_call_ms", kernel_call / 1000, "ms");
  bench::result("tool_read_call_walk_ms", walk_call / 1000, "ms");
  bench::result("tool_read_open_beneath_us", kernel_open, "us",
                "\"note\":\"by name (realpath + open): " + std::to_string(by_name_open) + " us\"");
#else
  const double by_name_call = read_call_us(tools::Roots(root.string()), runs, calls);
  std::printf("  read call, resolved by name (before issue 27):       %8.1f us\n", by_name_call);
  bench::result("tool_read_call_by_name_ms", by_name_call / 1000, "ms");
#endif
  std::error_code ec;
  fs::remove_all(root, ec);
}
