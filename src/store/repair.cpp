#include "store/repair.hpp"

#include "support/json_text.hpp"
#include "store/event_model.hpp"
#include "store/file_io.hpp"
#include "store/line_text.hpp"
#include "store/records.hpp"
#include "store/zstd_frames.hpp"

#include <unistd.h>

#include <cerrno>

namespace acp::store {

namespace json = boost::json;

bool needs_repair(const ScanResult& scan) { return scan.torn || scan.state.turn_open(); }

std::string closer_lines(const std::vector<json::object>& closers, Generation gen) {
  std::string lines;
  for (const auto& r : closers) {
    // In the shape the log's generation writes them (docs/store-format.md#crash-repair).
    std::optional<json::object> shaped;
    if (gen == Generation::project_dirs) shaped = to_v01_record(r, string_at(r, "type") == "tool/result");
    lines += support::to_json_text(shaped ? *shaped : r);
    lines += '\n';
  }
  return lines;
}

LogState repair_log(int fd, const std::string& path, Encoding enc, Generation gen, const ScanResult& scan) {
  std::uint64_t size = scan.file_size;
  if (scan.torn) {
    if (::ftruncate(fd, off_t(scan.committed_bytes)) != 0) throw_errno("truncate", path, errno);
    fsync_fd(fd, path);
    size = scan.committed_bytes;
  }
  // Recovered records are written back exactly as they were read.
  auto lines_of = [](const std::vector<json::object>& records) {
    std::string lines;
    for (const auto& r : records) {
      lines += support::to_json_text(r);
      lines += '\n';
    }
    return lines;
  };
  auto append = [&](const std::string& lines) {
    if (lines.empty()) return;
    const std::string bytes = enc == Encoding::zstd ? compress_frame(lines) : lines;
    try {
      pwrite_all(fd, bytes, size, path);
    } catch (...) {
      (void)::ftruncate(fd, off_t(size));
      throw;
    }
    size += bytes.size();
  };
  // Raw logs keep their preserved lines in place; a zstd torn frame is cut whole, so the complete
  // records it still held are written again: 45fc appends them and the closers as two batches,
  // 0.1.1 as one (docs/store-format.md#crash-repair).
  const std::vector<json::object> closers = scan.state.closers();
  std::string recovered = enc == Encoding::zstd ? lines_of(scan.recovered) : std::string();
  std::string closing = closer_lines(closers, gen);
  check_log_text(recovered + closing, path);
  if (gen == Generation::project_dirs) {
    append(recovered + closing);
  } else {
    append(recovered);
    append(closing);
  }
  fsync_fd(fd, path);
  LogState state = scan.state;
  for (const auto& c : closers) state.observe(c);
  return state;
}

} // namespace acp::store
