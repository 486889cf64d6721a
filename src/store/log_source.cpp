#include "store/log_source.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/zstd_frames.hpp"

#include <sys/stat.h>

#include <cerrno>


namespace acp::store {
namespace {

// Below the server's 1 MiB mmap threshold, so each read's buffer comes from (and returns to) the
// heap instead of being mapped and faulted in afresh for every log read.
constexpr std::size_t kReadChunk = 256u << 10;

std::uint64_t size_when_opened(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("stat", path, errno);
  return static_cast<std::uint64_t>(st.st_size);
}

SourceTail read_raw(int fd, const std::string& path, const LineSink& sink) {
  SourceTail tail;
  std::string carry;  // bytes of a line that started in an earlier chunk
  std::uint64_t offset = 0;
  const std::uint64_t expected_end = size_when_opened(fd, path);
  ReadBuffer buffer;
  for (;;) {
    const std::string_view chunk = buffer.read(fd, offset, kReadChunk, expected_end, path);
    if (chunk.empty()) break;
    std::size_t pos = 0;
    for (;;) {
      std::size_t nl = chunk.find('\n', pos);
      if (nl == std::string::npos) break;
      PlainLine line;
      line.number = ++tail.lines;
      line.file_end = offset + nl + 1;
      if (!carry.empty()) {
        carry.append(chunk.substr(pos, nl - pos));
        line.text = carry;
        line.storage = &carry;
        sink(line);
        carry.clear();
      } else {
        line.text = chunk.substr(pos, nl - pos);
        sink(line);
      }
      tail.complete_bytes = line.file_end;
      pos = nl + 1;
    }
    carry.append(chunk.substr(pos));
    offset += chunk.size();
  }
  tail.file_size = offset;
  tail.torn = !carry.empty();
  return tail;
}

// Frames are read incrementally through a window of the file, so memory holds one frame's
// compressed bytes and its plaintext, not the whole log.
SourceTail read_zstd(int fd, const std::string& path, const LineSink& sink) {
  SourceTail tail;
  std::string buf;            // window of the file starting at file offset `base`
  std::uint64_t base = 0;
  std::size_t start = 0;      // current frame's index in buf
  bool eof = false;
  const std::uint64_t expected_end = size_when_opened(fd, path);
  ReadBuffer chunk;
  auto fill = [&] {
    if (start > 0 && start >= buf.size() / 2) {
      buf.erase(0, start);
      base += start;
      start = 0;
    }
    std::string_view got = chunk.read(fd, base + buf.size(), kReadChunk, expected_end, path);
    if (got.empty()) eof = true;
    buf += got;
  };
  std::string plain;
  bool first = true;
  for (;;) {
    if (start == buf.size()) {
      if (eof) break;
      fill();
      continue;
    }
    std::string_view view = std::string_view(buf).substr(start);
    FrameMeasure m = measure_frame(view);
    if (m.status == FrameMeasure::incomplete && !eof) {
      fill();
      continue;
    }
    const std::uint64_t offset = base + start;
    if (m.status == FrameMeasure::invalid)
      throw StoreCorrupt(path, tail.lines + 1, m.error + " at byte " + std::to_string(offset));
    const bool torn = m.status == FrameMeasure::incomplete;
    const std::size_t size = torn ? view.size() : m.size;
    std::string_view bytes = view.substr(0, size);
    plain.clear();
    if (torn) {
      decompress_partial(bytes, plain);
      tail.torn = true;
    } else {
      std::string err = decompress_frame(bytes, plain);
      if (!err.empty())
        throw StoreCorrupt(path, tail.lines + 1, "zstd frame at byte " + std::to_string(offset) + ": " + err);
      if (plain.empty() || plain.back() != '\n')
        throw StoreCorrupt(path, tail.lines + 1,
                           "zstd frame at byte " + std::to_string(offset) + " does not end with a newline");
      if (first && plain.find('\n') != plain.size() - 1)
        throw StoreCorrupt(path, 1, "the first zstd frame must hold exactly the header line");
    }
    first = false;
    for (std::size_t pos = 0;;) {
      std::size_t nl = plain.find('\n', pos);
      if (nl == std::string::npos) break;
      PlainLine line;
      line.text = std::string_view(plain).substr(pos, nl - pos);
      line.number = ++tail.lines;
      line.strict = !torn;
      line.torn_frame = torn;
      line.file_end = offset + size;
      if (pos == 0 && nl + 1 == plain.size()) line.storage = &plain;  // the frame is this one line
      sink(line);
      pos = nl + 1;
    }
    if (!torn) tail.complete_bytes = offset + size;
    start += size;
  }
  tail.file_size = base + buf.size();
  return tail;
}

} // namespace

SourceTail read_log_lines(int fd, const std::string& path, Encoding enc, const LineSink& sink) {
  return enc == Encoding::zstd ? read_zstd(fd, path, sink) : read_raw(fd, path, sink);
}

} // namespace acp::store
