#include "store/zstd_frames.hpp"

#include "store/errors.hpp"

#include <zstd.h>

#include <cstdint>
#include <memory>

namespace acp::store {
namespace {

constexpr std::uint32_t kMagic = 0xFD2FB528;

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Contexts are reused per thread: creating one per batch would dominate small appends.
ZSTD_CCtx* compressor() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx = [] {
    std::unique_ptr<ZSTD_CCtx, CCtxFree> c(ZSTD_createCCtx());
    if (!c) throw StoreError("ZSTD_createCCtx failed");
    return c;
  }();
  return cctx.get();
}

std::unique_ptr<ZSTD_DCtx, DCtxFree> new_decompressor() {
  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (!d) throw StoreError("ZSTD_createDCtx failed");
  return d;
}

ZSTD_DCtx* decompressor() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx = new_decompressor();
  return dctx.get();
}

std::uint32_t le(std::string_view s, std::size_t at, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint32_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// Streams `frame` through the decompressor; returns the libzstd error name or "" when the frame
// ended cleanly. `complete` is set when libzstd reported the end of the frame.
std::string run_decompress(ZSTD_DCtx* d, std::string_view frame, std::string& out, bool& complete,
                           bool sized_by_declaration) {
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  complete = false;
  // Output grows by a step zero-filled up front: a whole 128 KiB step for each small frame (the
  // writer's frames are one turn, a few KiB) made memset a quarter of a zstd session/load's
  // instructions. A frame that declares its size may get just that (+1, so the end is seen in one
  // call); the declaration is untrusted, so never more than the library's step.
  std::size_t chunk = ZSTD_DStreamOutSize();
  const unsigned long long declared =
      sized_by_declaration ? ZSTD_getFrameContentSize(frame.data(), frame.size()) : ZSTD_CONTENTSIZE_UNKNOWN;
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR && declared < chunk)
    chunk = static_cast<std::size_t>(declared) + 1;
  for (;;) {
    std::size_t before = out.size();
    out.resize(before + chunk);
    ZSTD_outBuffer o{out.data() + before, chunk, 0};
    std::size_t ret = ZSTD_decompressStream(d, &o, &in);
    out.resize(before + o.pos);
    if (ZSTD_isError(ret)) return ZSTD_getErrorName(ret);
    if (ret == 0) {
      complete = true;
      return {};
    }
    if (in.pos == in.size && o.pos < chunk) return "truncated frame";
  }
}

} // namespace

FrameMeasure measure_frame(std::string_view f) {
  FrameMeasure m;
  auto incomplete = [&] {
    m.status = FrameMeasure::incomplete;
    return m;
  };
  auto invalid = [&](const char* why) {
    m.status = FrameMeasure::invalid;
    m.error = why;
    return m;
  };
  if (f.size() < 4) {
    // EOF inside the magic number is a torn frame only if what is there matches the magic.
    const char magic[4] = {'\x28', '\xB5', '\x2F', '\xFD'};
    if (std::string_view(magic, f.size()) == f) return incomplete();
    return invalid("invalid zstd frame magic");
  }
  if (le(f, 0, 4) != kMagic) return invalid("invalid zstd frame magic");
  std::size_t pos = 4;
  if (pos >= f.size()) return incomplete();
  auto fhd = static_cast<unsigned char>(f[pos++]);
  if (fhd & 0x18) return invalid("reserved bits set in zstd frame header");
  const unsigned fcs_flag = fhd >> 6;
  const bool single_segment = fhd & 0x20;
  const bool checksum = fhd & 0x04;
  static constexpr std::size_t dict_bytes[4] = {0, 1, 2, 4};
  static constexpr std::size_t fcs_bytes[4] = {0, 2, 4, 8};
  const std::size_t header_rest = (single_segment ? 0 : 1) + dict_bytes[fhd & 3] +
                                  (fcs_flag == 0 ? (single_segment ? 1 : 0) : fcs_bytes[fcs_flag]);
  if (f.size() - pos < header_rest) return incomplete();
  pos += header_rest;
  for (;;) {
    if (f.size() - pos < 3) return incomplete();
    const std::uint32_t bh = le(f, pos, 3);
    pos += 3;
    const unsigned type = (bh >> 1) & 3;
    if (type == 3) return invalid("reserved zstd block type");
    const std::size_t payload = type == 1 ? 1 : std::size_t(bh >> 3);
    if (f.size() - pos < payload) return incomplete();
    pos += payload;
    if (bh & 1) break;  // last block
  }
  if (checksum) {
    if (f.size() - pos < 4) return incomplete();
    pos += 4;
  }
  m.status = FrameMeasure::complete;
  m.size = pos;
  return m;
}

FrameScan scan_frames(std::string_view f) {
  FrameScan scan;
  for (std::size_t pos = 0; pos < f.size();) {
    FrameMeasure m = measure_frame(f.substr(pos));
    if (m.status == FrameMeasure::invalid) {
      scan.error = m.error;
      scan.error_offset = pos;
      break;
    }
    if (m.status == FrameMeasure::incomplete) {
      scan.frames.push_back({pos, f.size() - pos, true});
      break;
    }
    scan.frames.push_back({pos, m.size, false});
    pos += m.size;
  }
  return scan;
}

std::string compress_frame(std::string_view plain) {
  ZSTD_CCtx* c = compressor();
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, ZSTD_CLEVEL_DEFAULT);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  std::size_t n = ZSTD_compress2(c, out.data(), out.size(), plain.data(), plain.size());
  if (ZSTD_isError(n)) throw StoreError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::string decompress_frame(std::string_view frame, std::string& out) {
  bool complete = false;
  const std::size_t before = out.size();
  std::string err = run_decompress(decompressor(), frame, out, complete, true);
  if (err.empty() && complete) return err;
  // A frame that lies about its size or is damaged is decoded again the plain way by a fresh
  // context: what it yields and the error it reports depend neither on the declaration nor on the
  // frames this thread decoded before (libzstd's error for an oversized block depends on the
  // internal buffers a reused context kept from earlier frames; found by the store fuzz target).
  out.resize(before);
  err = run_decompress(new_decompressor().get(), frame, out, complete, false);
  if (err.empty() && !complete) err = "truncated frame";
  return err;
}

void decompress_partial(std::string_view frame, std::string& out) {
  // Torn frames (a crash's tail) are rare: a fresh context, so what is recovered has no history.
  bool complete = false;
  (void)run_decompress(new_decompressor().get(), frame, out, complete, false);
}

} // namespace acp::store
