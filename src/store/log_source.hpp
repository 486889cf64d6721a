// Turns a log file of either encoding into its plaintext lines, in order, without holding more
// than one read chunk (raw) or one frame's plaintext (zstd) at a time, so replaying a 100 MB log
// does not need it in memory twice. Framing defects that are corruption per
// docs/store-format.md#encodings-and-zstd-framing
// (a complete frame that fails to decompress or its checksum, bad magic, a first frame that is not
// exactly one line) are thrown here as StoreCorrupt; line-level rules live in log_scan.
#pragma once

#include "store/layout.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace acp::store {

struct PlainLine {
  std::string_view text;      ///< without the '\n'
  std::int64_t number = 0;    ///< 1-based line number in the plaintext
  bool strict = false;        ///< zstd: inside a complete frame, where any defect is corruption
  std::uint64_t file_end = 0; ///< raw: file offset after the '\n'; zstd: end of the frame holding it
  bool torn_frame = false;    ///< zstd: recovered from a torn final frame
  /// The buffer holding `text` when it holds nothing else the reader still needs: a consumer done
  /// with `text` (it parsed it) may free it, so a huge line is not kept beside its parsed event.
  std::string* storage = nullptr;
};

struct SourceTail {
  std::uint64_t file_size = 0;
  /// raw: offset after the last '\n'; zstd: end of the last complete frame.
  std::uint64_t complete_bytes = 0;
  /// raw: bytes after the last '\n'; zstd: a torn final frame.
  bool torn = false;
  std::int64_t lines = 0;  ///< complete lines delivered
};

using LineSink = std::function<void(const PlainLine&)>;

/// Delivers every '\n'-terminated line of the open file `fd` (path for messages).
SourceTail read_log_lines(int fd, const std::string& path, Encoding enc, const LineSink& sink);

} // namespace acp::store
