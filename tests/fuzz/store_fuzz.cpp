// Fuzz target `store`: the session log reader over a real file descriptor (a memfd).
// Each input is read three ways (raw and framed zstd under both store generations): as a raw JSONL log, as the bytes of a zstd log, and as plaintext
// compressed into zstd frames (segments separated by 0x1E become frames; a final segment "\x1F<n>"
// tears the last frame by n+1 bytes). Each read runs scan_log (read_log_lines underneath), the
// surface fold over the preserved events and, when needs_repair(), repair_log in place; the scan is
// repeated with transient events (EventLifetime::transient), which must change nothing.
// Properties: a repaired log scans without corruption, needs no repair, and keeps every event the
// repair reported.
#include "fuzz_support.hpp"

#include "store/errors.hpp"
#include "store/fold.hpp"
#include "store/log_scan.hpp"
#include "store/repair.hpp"
#include "store/zstd_frames.hpp"

#include <boost/json/serialize.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace {

using namespace acp;

class MemFile {
public:
  explicit MemFile(std::string_view bytes) : fd_(::memfd_create("dsh-fuzz-log", MFD_CLOEXEC)) {
    if (fd_ < 0) dsh_fuzz::violated("memfd_create failed");
    std::size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, off_t(done));
      if (n <= 0) dsh_fuzz::violated("write to memfd failed");
      done += std::size_t(n);
    }
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  int fd() const { return fd_; }

private:
  int fd_;
};

// What a scan delivered and how it ended, to compare the two event lifetimes.
struct Outcome {
  std::vector<std::string> events;  // serialised
  std::string corrupt;              // "line: reason", empty when the scan succeeded
};

Outcome scan_transient(int fd, const std::string& path, store::Encoding enc) {
  Outcome out;
  try {
    store::scan_log(
        fd, path, enc, [&](boost::json::object&& e) { out.events.push_back(boost::json::serialize(e)); }, {},
        store::EventLifetime::transient);
  } catch (const store::StoreCorrupt& e) {
    out.corrupt = std::to_string(e.line()) + ": " + e.reason();
  }
  return out;
}

void read_log(std::string_view bytes, store::Encoding enc, store::Generation gen) {
  const std::string path = enc == store::Encoding::zstd ? "fuzz.jsonl.zstd" : "fuzz.jsonl";
  MemFile file(bytes);
  store::ScanResult scan;
  std::vector<boost::json::object> events;
  Outcome kept;
  try {
    scan = store::scan_log(file.fd(), path, enc, [&](boost::json::object&& e) {
      kept.events.push_back(boost::json::serialize(e));
      events.push_back(std::move(e));
    });
  } catch (const store::StoreCorrupt& e) {
    if (e.line() < 1) dsh_fuzz::violated("StoreCorrupt without a 1-based line");
    kept.corrupt = std::to_string(e.line()) + ": " + e.reason();
  }
  // Replays and references read with transient events (each line parsed into an arena of its own):
  // the same events, in the same order, and the same verdict.
  const Outcome transient = scan_transient(file.fd(), path, enc);
  if (transient.corrupt != kept.corrupt) {
    std::fprintf(stderr, "kept: \"%s\" after %zu events\ntransient: \"%s\" after %zu events\n", kept.corrupt.c_str(),
                 kept.events.size(), transient.corrupt.c_str(), transient.events.size());
    dsh_fuzz::violated("transient and kept scans disagree on corruption");
  }
  if (transient.events != kept.events) dsh_fuzz::violated("transient and kept scans delivered different events");
  if (!kept.corrupt.empty()) return;
  if (std::int64_t(events.size()) != scan.state.count()) dsh_fuzz::violated("sink and state disagree on the event count");
  try {
    (void)store::fold_surface(events);
  } catch (const store::FoldError&) {
  }
  if (!store::needs_repair(scan)) return;

  store::LogState repaired = store::repair_log(file.fd(), path, enc, gen, scan);
  store::ScanResult again;
  try {
    again = store::scan_log(file.fd(), path, enc);
  } catch (const store::StoreCorrupt& e) {
    std::fprintf(stderr, "after repair: %s\n", e.what());
    dsh_fuzz::violated("a repaired log is corrupt");
  }
  if (store::needs_repair(again)) dsh_fuzz::violated("a repaired log still needs repair");
  if (again.state.count() != repaired.count()) dsh_fuzz::violated("a repaired log lost or gained events");
}

// Plaintext segments → one zstd frame each, optionally torn.
std::string compress_segments(std::string_view in) {
  auto segments = dsh_fuzz::split(in, '\x1e');
  std::size_t tear = 0;
  if (segments.size() > 1 && !segments.back().empty() && segments.back()[0] == '\x1f') {
    tear = segments.back().size() > 1 ? 1 + static_cast<unsigned char>(segments.back()[1]) : 1;
    segments.pop_back();
  }
  std::string file;
  std::size_t last_size = 0;
  for (std::string_view s : segments) {
    std::string frame = store::compress_frame(s);
    last_size = frame.size();
    file += frame;
  }
  if (tear > 0) file.resize(file.size() - std::min(tear, last_size));
  return file;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Both generations read the same way (lines are normalised by shape); repair writes each one's closers.
  read_log(in, store::Encoding::none, store::Generation::flat);
  read_log(in, store::Encoding::none, store::Generation::project_dirs);
  read_log(in, store::Encoding::zstd, store::Generation::flat);
  const std::string frames = compress_segments(in);
  read_log(frames, store::Encoding::zstd, store::Generation::flat);
  read_log(frames, store::Encoding::zstd, store::Generation::project_dirs);
  return 0;
}
