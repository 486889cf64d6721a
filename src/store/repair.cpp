#include "store/repair.hpp"

#include "support/json_text.hpp"
#include "store/file_io.hpp"
#include "store/zstd_frames.hpp"

#include <unistd.h>

#include <cerrno>

namespace acp::store {

namespace json = boost::json;

bool needs_repair(const ScanResult& scan) { return scan.torn || scan.state.turn_open(); }

LogState repair_log(int fd, const std::string& path, Encoding enc, const ScanResult& scan) {
  std::uint64_t size = scan.file_size;
  if (scan.torn) {
    if (::ftruncate(fd, off_t(scan.committed_bytes)) != 0) throw_errno("truncate", path, errno);
    fsync_fd(fd, path);
    size = scan.committed_bytes;
  }
  // One batch (one zstd frame) per group, as the harness appends them.
  auto append = [&](const std::vector<json::object>& records) {
    if (records.empty()) return;
    std::string lines;
    for (const auto& r : records) {
      lines += support::to_json_text(r);
      lines += '\n';
    }
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
  // records it still held are written again in a frame of their own.
  if (enc == Encoding::zstd) append(scan.recovered);
  const std::vector<json::object> closers = scan.state.closers();
  append(closers);
  fsync_fd(fd, path);
  LogState state = scan.state;
  for (const auto& c : closers) state.observe(c);
  return state;
}

} // namespace acp::store
