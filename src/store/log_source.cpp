#include "store/log_source.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/zstd_frames.hpp"

#include <sys/stat.h>

namespace acp::store {
namespace {

constexpr std::size_t kReadChunk = 1 << 20;

SourceTail read_raw(int fd, const std::string& path, const LineSink& sink) {
  SourceTail tail;
  std::string carry;  // bytes of a line that started in an earlier chunk
  std::uint64_t offset = 0;
  for (;;) {
    std::string chunk = pread_some(fd, offset, kReadChunk, path);
    if (chunk.empty()) break;
    std::size_t pos = 0;
    for (;;) {
      std::size_t nl = chunk.find('\n', pos);
      if (nl == std::string::npos) break;
      PlainLine line;
      line.number = ++tail.lines;
      line.file_end = offset + nl + 1;
      if (!carry.empty()) {
        carry.append(chunk, pos, nl - pos);
        line.text = carry;
        sink(line);
        carry.clear();
      } else {
        line.text = std::string_view(chunk).substr(pos, nl - pos);
        sink(line);
      }
      tail.complete_bytes = line.file_end;
      pos = nl + 1;
    }
    carry.append(chunk, pos, std::string::npos);
    offset += chunk.size();
  }
  tail.file_size = offset;
  tail.torn = !carry.empty();
  return tail;
}

SourceTail read_zstd(int fd, const std::string& path, const LineSink& sink) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("stat", path, errno);
  std::string file = pread_some(fd, 0, std::size_t(st.st_size), path);
  SourceTail tail;
  tail.file_size = file.size();
  FrameScan scan = scan_frames(file);
  std::string plain;
  for (std::size_t fi = 0; fi < scan.frames.size(); ++fi) {
    const FrameSpan& span = scan.frames[fi];
    std::string_view bytes = std::string_view(file).substr(span.offset, span.size);
    plain.clear();
    if (span.torn) {
      decompress_partial(bytes, plain);
      tail.torn = true;
    } else {
      std::string err = decompress_frame(bytes, plain);
      if (!err.empty())
        throw StoreCorrupt(path, tail.lines + 1, "zstd frame at byte " + std::to_string(span.offset) + ": " + err);
      if (plain.empty() || plain.back() != '\n')
        throw StoreCorrupt(path, tail.lines + 1,
                           "zstd frame at byte " + std::to_string(span.offset) + " does not end with a newline");
      if (fi == 0 && plain.find('\n') != plain.size() - 1)
        throw StoreCorrupt(path, 1, "the first zstd frame must hold exactly the header line");
    }
    std::size_t pos = 0;
    for (;;) {
      std::size_t nl = plain.find('\n', pos);
      if (nl == std::string::npos) break;
      PlainLine line;
      line.text = std::string_view(plain).substr(pos, nl - pos);
      line.number = ++tail.lines;
      line.strict = !span.torn;
      line.torn_frame = span.torn;
      line.file_end = span.offset + span.size;
      sink(line);
      pos = nl + 1;
    }
    if (!span.torn) tail.complete_bytes = span.offset + span.size;
  }
  if (!scan.error.empty())
    throw StoreCorrupt(path, tail.lines + 1, scan.error + " at byte " + std::to_string(scan.error_offset));
  return tail;
}

} // namespace

SourceTail read_log_lines(int fd, const std::string& path, Encoding enc, const LineSink& sink) {
  return enc == Encoding::zstd ? read_zstd(fd, path, sink) : read_raw(fd, path, sink);
}

} // namespace acp::store
