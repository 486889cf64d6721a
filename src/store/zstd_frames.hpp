// Zstandard framing of zstd-encoded logs (docs/store-format.md#encodings-and-zstd-framing). A log is a
// concatenation of independent frames, one per append batch. The scanner finds frame boundaries from the
// frame and block headers alone (no decompression), which is how a frame cut short by a crash is told apart
// from a damaged complete frame: EOF inside a frame = torn; anything else malformed = corruption.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace acp::store {

struct FrameSpan {
  std::size_t offset = 0;
  std::size_t size = 0;  ///< bytes present (for a torn frame: up to EOF)
  bool torn = false;     ///< EOF inside the frame (only ever the last span)
};

/// Result of walking the frame headers of a whole file.
struct FrameScan {
  std::vector<FrameSpan> frames;
  /// Non-empty when a complete-looking prefix is followed by bytes that are not a valid frame
  /// (bad magic, reserved bits, reserved block type): the byte offset and the reason.
  std::string error;
  std::size_t error_offset = 0;
};

FrameScan scan_frames(std::string_view file);

/// Header walk of the one frame starting at `at[0]`.
struct FrameMeasure {
  enum Status { complete, incomplete, invalid } status = invalid;
  std::size_t size = 0;  ///< complete: the frame's size
  std::string error;     ///< invalid: why
};
FrameMeasure measure_frame(std::string_view at);

/// One frame with the content checksum flag at the default level.
std::string compress_frame(std::string_view plain);

/// Decompresses one complete frame into `out` (appended). Returns an empty string on success,
/// else the libzstd error (a checksum mismatch included).
std::string decompress_frame(std::string_view frame, std::string& out);

/// Decompresses as much of a torn frame as possible into `out`, ignoring errors.
void decompress_partial(std::string_view frame, std::string& out);

} // namespace acp::store
