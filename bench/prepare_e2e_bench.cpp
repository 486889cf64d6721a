// bench_prepare_e2e: the "prepare (end to end) from a stored log" figure of docs/decisions.md#benchmarks.
//
// For 1, 10 and 200 MB sources in a raw and a zstd store it times SessionReferenceService::prepare()
// of one message that references the source: read (stream + decompress) + fold + project + retain +
// serialise, under the default 65,536-byte budget, through the same store-backed source the server
// uses (refs::project_log over SessionStore::read_events). Sources are harness-shaped prompt turns:
// turn/start, a user message (~1 KB), 24 streamed text chunks, the assistant message (~4 KB),
// step/turn ends; writing them is not timed. Every figure runs in a fresh child process so its peak
// RSS (VmHWM) is its own: baseline is VmRSS before the prepare, and "after" is VmRSS once it
// returned. MB/s is plaintext log bytes per second (the zstd file is smaller); the minimum of
// several runs is the figure, as with the other benches on this shared machine.
//
// Each source exists in both store generations (issue 15): the 45fc root (flat layout, 45fc shapes) and a 0.1
// root holding the same turns in the 0.1 layout and 0.1.1 shapes (step/start before the claimed user/message,
// ids on messages, the assistant/message envelope). The 0.1 raw source is what our writer puts into a 0.1
// root; the 0.1 zstd source packs each turn's text deltas into one text-chunks row
// (docs/store-format.md#packed-chunk-rows), as 0.1.1 writes by default, so a MB of it holds more turns than a
// MB of the unpacked logs.
#include "refs/service.hpp"
#include "refs/streaming_projection.hpp"

#include "store/event_builders.hpp"
#include "store/event_model.hpp"
#include "store/layout.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "store/zstd_frames.hpp"

#include "bench_result.hpp"

#include <boost/json.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace json = boost::json;
namespace store = acp::store;
namespace refs = acp::refs;

namespace {

long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key) + 1);
  return -1;
}

class StoreSource final : public refs::SessionSource {
public:
  explicit StoreSource(store::SessionStore& s) : store_(s) {}
  refs::ProjectedSource read_projected(const std::string& id, std::int64_t max_bytes, std::stop_token stop) override {
    return refs::project_log(
        [&](const refs::EventSink& sink) {
          // As the server's source (handlers/store_source.cpp): the events die once folded.
          store::StreamResult r = store_.read_events(id, sink, stop, store::EventLifetime::transient);
          return refs::StreamedLog{std::move(r.header), r.capturedThroughSeq};
        },
        max_bytes);
  }
  std::vector<store::SessionListing> list_sessions() override { return store_.list_sessions(); }

private:
  store::SessionStore& store_;
};

std::string words(std::mt19937& rng, std::size_t bytes) {
  static const char* const vocabulary[] = {"the ", "session ", "reference ", "log ", "stream ", "memory ", "budget ",
                                           "compaction ", "surface ", "event ", "<tag> ", "\"quoted\" ", "naïve ",
                                           "retention ", "projection ", "fold ", "zstd ", "frame ", "cancel ", "reader "};
  std::string out;
  while (out.size() < bytes) out += vocabulary[rng() % 20];
  return out;
}

/// Sees each appended batch; returns the plaintext bytes it wrote of it.
using BatchSink = std::function<std::uint64_t(const std::vector<json::object>&)>;

// Writes prompt turns until the plaintext reaches `target` bytes; returns the plaintext size. In a
// 0.1 root the turn has 0.1.1's layout (step/start before the user/message). `on_batch` sees every
// appended batch's records (normalised, with the ids the 0.1 writer gave them) and says how many
// plaintext bytes it made of them; those count towards `target` instead.
std::uint64_t write_source(store::SessionStore& s, const std::string& id, std::uint64_t target, std::int64_t& turns,
                           const BatchSink& on_batch = {}) {
  std::mt19937 rng(42);
  store::SessionHeader h;
  h.id = id;
  h.cwd = "/bench";
  h.createdAt = 1700000000000;
  auto w = s.create(h);
  const bool v01 = s.generation() == store::Generation::project_dirs;
  std::uint64_t written = 0;
  while (written < target) {
    const std::int64_t turn = w.last_turn() + 1;
    std::vector<store::NewEvent> batch{store::events::turn_start(turn)};
    if (v01) batch.push_back(store::events::step_start(turn, 1));
    batch.push_back(store::events::user_message(words(rng, 1000)));
    if (!v01) batch.push_back(store::events::step_start(turn, 1));
    std::string answer;
    json::array chunks;
    for (int c = 0; c < 24; ++c) {
      std::string piece = words(rng, 170);
      answer += piece;
      chunks.push_back(w.next_seq() + std::int64_t(batch.size()));
      batch.push_back(store::events::text_delta(turn, 1, 0, piece));
    }
    batch.push_back(store::events::assistant_message(turn, 1, json::array{json::object{{"type", "text"}, {"text", answer}}},
                                                     "echo", "echo-1", std::nullopt, chunks));
    batch.push_back(store::events::step_end(turn, 1));
    batch.push_back(store::events::turn_end(turn, store::events::reason("completed")));
    auto records = w.append(std::move(batch));
    if (on_batch) {
      written += on_batch(records);
      continue;
    }
    for (const auto& record : records) {
      auto shaped = v01 ? store::to_v01_record(record) : std::nullopt;
      written += json::serialize(shaped ? *shaped : record).size() + 1;
    }
  }
  turns = w.last_turn();
  w.release();
  return written;
}

// The key a delta event packs under (docs/store-format.md#packed-chunk-rows): its chunk kind, turn, step and index;
// empty for any other event.
std::string pack_key(const json::object& e) {
  if (store::string_at(e, "type") != "assistant/chunk") return {};
  const json::object* d = store::object_at(e, "data");
  const json::object* c = d ? store::object_at(*d, "chunk") : nullptr;
  if (!c) return {};
  auto kind = store::string_at(*c, "type");
  if (kind != "text-delta" && kind != "reasoning-delta") return {};
  return std::string(kind) + "/" + json::serialize(d->at("turn")) + "/" + json::serialize(d->at("step")) + "/" +
         json::serialize(c->at("index"));
}

// The lines of one append batch as 0.1.1 writes them with packChunks on: runs of >= 3 consecutive
// deltas of one kind, turn, step and index become one text-chunks / reasoning-chunks row.
std::string packed_lines(const std::vector<json::object>& events) {
  std::string out;
  for (std::size_t k = 0; k < events.size();) {
    const std::string key = pack_key(events[k]);
    std::size_t j = k;
    while (!key.empty() && j + 1 < events.size() && pack_key(events[j + 1]) == key &&
           events[j + 1].at("seq").to_number<std::int64_t>() == events[j].at("seq").to_number<std::int64_t>() + 1)
      ++j;
    if (key.empty() || j - k + 1 < 3) {
      out += json::serialize(events[k]) + "\n";
      ++k;
      continue;
    }
    const json::object& d0 = events[k].at("data").as_object();
    json::array dt, texts;
    for (std::size_t m = k; m <= j; ++m) {
      if (m > k) dt.push_back(events[m].at("time").to_number<std::int64_t>() - events[m - 1].at("time").to_number<std::int64_t>());
      texts.push_back(events[m].at("data").at("chunk").at("text"));
    }
    const bool text = d0.at("chunk").at("type").as_string() == "text-delta";
    json::object row{{"type", text ? "text-chunks" : "reasoning-chunks"},
                     {"seq0", events[k].at("seq")},
                     {"time0", events[k].at("time")},
                     {"data", json::object{{"turn", d0.at("turn")},
                                           {"step", d0.at("step")},
                                           {"index", d0.at("chunk").at("index")},
                                           {"dt", std::move(dt)},
                                           {"texts", std::move(texts)}}}};
    out += json::serialize(row) + "\n";
    k = j + 1;
  }
  return out;
}

enum class Gen { v45fc, v01 };

// Writes the source session of one figure into `root`; returns its plaintext size. A 0.1 zstd
// source is written through a raw 0.1 store beside it (our writer never packs) and re-framed here
// with its deltas packed, one frame per append batch, header frame first
// (docs/store-format.md#encodings-and-zstd-framing).
std::uint64_t make_source(const std::string& root, Gen gen, store::Encoding enc, std::uint64_t target,
                          std::int64_t& turns) {
  if (gen == Gen::v45fc || enc == store::Encoding::none) {
    store::StoreOptions o{root, enc, "", std::chrono::milliseconds(2000), std::nullopt};
    if (gen == Gen::v01) o.generation = store::Generation::project_dirs;
    store::SessionStore s(o);
    return write_source(s, "source", target, turns);
  }
  const std::string scratch = root + "-unpacked";
  store::SessionHeader h;
  h.id = "source";
  h.cwd = "/bench";
  h.createdAt = 1700000000000;
  const std::string dir = root + "/" + store::session_dir(store::Generation::project_dirs, h.cwd, h.id);
  std::filesystem::create_directories(dir);
  for (std::string d = dir; d.size() >= root.size(); d = d.substr(0, d.rfind('/')))
    std::filesystem::permissions(d, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
  std::ofstream out(dir + "/" + store::v01_log_name(enc), std::ios::binary);
  const std::string header = json::serialize(store::header_record(h)) + "\n";
  out << store::compress_frame(header);
  std::uint64_t plain = 0;  // event lines only, as write_source counts them
  {
    store::StoreOptions o{scratch, store::Encoding::none, "", std::chrono::milliseconds(2000), std::nullopt};
    o.generation = store::Generation::project_dirs;
    store::SessionStore s(o);
    write_source(s, "source", target, turns, [&](const std::vector<json::object>& records) {
      std::vector<json::object> shaped;
      shaped.reserve(records.size());
      for (const auto& r : records) {
        auto v = store::to_v01_record(r);
        shaped.push_back(v ? std::move(*v) : r);
      }
      const std::string lines = packed_lines(shaped);
      plain += lines.size();
      out << store::compress_frame(lines);
      return std::uint64_t(lines.size());
    });
  }
  std::filesystem::remove_all(scratch);
  if (!out.flush()) std::exit(5);
  return plain;
}

double cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

struct Figure {
  double ms = 0;
  double cpu = 0;  ///< CPU time of the process (all threads) during the prepare
  long baseline_kb = 0, peak_kb = 0, after_kb = 0;
  std::int64_t original_messages = -1;  ///< what the snapshot says it projected (a check: 2 per turn)
};

// One prepare in a fresh child process; the child writes its figure to a pipe.
Figure measure(const std::string& root, store::Encoding enc) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(2);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Figure f;
    {
      store::SessionStore s(store::StoreOptions{root, enc, "", std::chrono::milliseconds(2000), std::nullopt});
      refs::SessionReferenceService service(std::make_shared<StoreSource>(s), refs::Config{});
      json::array content{json::object{{"type", "text"}, {"text", "see @source"}}};
      std::vector<refs::SessionReference> references{{"source", std::nullopt}};
      f.baseline_kb = status_kb("VmRSS");
      auto start = std::chrono::steady_clock::now();
      const double cpu0 = cpu_ms();
      refs::PreparedMessage m = service.prepare(refs::Target{"target", std::nullopt}, content, references);
      f.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      f.cpu = cpu_ms() - cpu0;
      if (!m.additional_context) std::exit(3);
      const auto& refs_array = m.additional_context->source.at("references").as_array();
      f.original_messages = refs_array.at(0).at("originalMessages").to_number<std::int64_t>();
      f.peak_kb = status_kb("VmHWM");
    }
    f.after_kb = status_kb("VmRSS");
    if (::write(fds[1], &f, sizeof f) != sizeof f) std::_Exit(4);
    std::_Exit(0);
  }
  ::close(fds[1]);
  Figure f;
  if (::read(fds[0], &f, sizeof f) != sizeof f) f.ms = -1;
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return f;
}

} // namespace

int main(int argc, char** argv) {
  // Optional arguments: the sizes in MB (default 1 10 200), `--generation 45fc|0.1` (default both).
  std::vector<std::uint64_t> sizes;
  std::vector<Gen> gens{Gen::v45fc, Gen::v01};
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--generation" && i + 1 < argc) {
      gens = {std::string_view(argv[++i]) == "0.1" ? Gen::v01 : Gen::v45fc};
      continue;
    }
    sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  if (sizes.empty()) sizes = {1, 10, 200};
  std::printf("prepare (end to end from a stored log): SessionReferenceService::prepare() of one reference =\n"
              "stream + decompress + fold + project + retain (65536-byte budget) + serialise, store-backed source\n"
              "as in the server; harness-shaped turns (user ~1 KB, 24 chunks, assistant ~4 KB). Fresh process per\n"
              "run; MB/s over plaintext log bytes; peak = VmHWM - VmRSS before the prepare; after = VmRSS after it.\n"
              "Sources in both generations: 45fc, and 0.1 (0.1 layout and 0.1.1 shapes; zstd with the 24 text\n"
              "deltas of a turn packed into one text-chunks row, as 0.1.1 writes by default).\n"
              "Targets: >= 200 MB/s raw, >= 150 MB/s zstd, peak <= baseline + 64 MB at 200 MB.\n");
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) std::printf("load average (1 min) at start: %.2f\n", load[0]);
  std::printf("MB/s is over wall time; cpu MB/s over the process's CPU time in the prepare, the figure a\n"
              "loaded machine disturbs least.\n");
  std::printf("\n%-4s %-5s %8s %9s %6s %10s %9s %10s %9s %10s %10s\n", "gen", "enc", "MB", "file MB", "runs", "min ms",
              "MB/s", "min cpu ms", "cpu MB/s", "peak +MB", "after +MB");
  const std::string base = std::filesystem::temp_directory_path() / ("dsh-bench-prepare-" + std::to_string(::getpid()));
  for (Gen gen : gens) {
    for (auto enc : {store::Encoding::none, store::Encoding::zstd}) {
      for (std::uint64_t mb : sizes) {
        const std::string gen_name = gen == Gen::v01 ? "0.1" : "45fc";
        const std::string root = base + "/" + gen_name + "-" + std::string(store::encoding_name(enc)) + "-" + std::to_string(mb);
        std::int64_t turns = 0;
        const std::uint64_t plain = make_source(root, gen, enc, mb << 20, turns);
        std::uint64_t file = 0;
        for (const auto& e : std::filesystem::recursive_directory_iterator(root))
          if (e.is_regular_file()) file += e.file_size();
        const int runs = mb >= 200 ? 3 : 7;
        std::vector<Figure> figures;
        for (int r = 0; r < runs; ++r) figures.push_back(measure(root, enc));
        auto best = *std::min_element(figures.begin(), figures.end(), [](auto& a, auto& b) { return a.ms < b.ms; });
        // Every user and assistant message of every turn must have reached the projection.
        for (const auto& f : figures)
          if (f.original_messages != 2 * turns) {
            std::fprintf(stderr, "bench_prepare_e2e: %s source of %lld turns projected %lld messages\n", root.c_str(),
                         (long long)turns, (long long)f.original_messages);
            return 1;
          }
        long peak = 0, after = 0;
        for (const auto& f : figures) {
          peak = std::max(peak, f.peak_kb - f.baseline_kb);
          after = std::max(after, f.after_kb - f.baseline_kb);
        }
        double cpu = figures.front().cpu;
        for (const auto& f : figures) cpu = std::min(cpu, f.cpu);
        const double mb_plain = double(plain) / 1048576.0;
        std::printf("%-4s %-5s %8.1f %9.1f %6d %10.1f %9.1f %10.1f %9.1f %10.1f %10.1f\n", gen_name.c_str(),
                    std::string(store::encoding_name(enc)).c_str(), mb_plain, double(file) / 1048576.0, runs, best.ms,
                    mb_plain / (best.ms / 1000.0), cpu, mb_plain / (cpu / 1000.0), double(peak) / 1024.0,
                    double(after) / 1024.0);
        const std::string key = "prepare_e2e_" + std::string(gen == Gen::v01 ? "v01_" : "") +
                                std::string(enc == store::Encoding::zstd ? "zstd" : "raw") + "_" + std::to_string(mb) + "mb";
        bench::result(key + "_mbps", mb_plain / (best.ms / 1000.0), "MB/s",
                      "\"note\":\"cpu " + std::to_string(int(mb_plain / (cpu / 1000.0))) + " MB/s\"");
        bench::result(key + "_peak_mb", double(peak) / 1024.0, "MB");
        std::fflush(stdout);
        std::filesystem::remove_all(root);
      }
    }
  }
  std::filesystem::remove_all(base);
  return 0;
}
