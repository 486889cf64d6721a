#include "support/image_metadata.hpp"

#include "support/byte_order.hpp"
#include "support/image.hpp"

#include <array>
#include <cstdint>
#include <optional>

namespace acp::support {

using namespace bytes;

namespace {

void put_le32(std::string& s, std::size_t at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) s[at + std::size_t(k)] = static_cast<char>((v >> (8 * k)) & 0xFF);
}

/// The result of a walk: the kept bytes; "" when nothing was dropped (the file stays as it is);
/// nullopt for a damaged structure. (Every image keeps at least its signature: never "" otherwise.)
using Kept = std::optional<std::string>;

// ---- JPEG ----

// An APP1 segment holding an Exif block with the orientation alone (big-endian TIFF, one IFD entry).
std::string orientation_segment(unsigned orientation) {
  std::string s("\xFF\xE1\x00\x22"
                "Exif\0\0"
                "MM\x00\x2A\x00\x00\x00\x08"
                "\x00\x01"
                "\x01\x12\x00\x03\x00\x00\x00\x01",
                4 + 6 + 8 + 2 + 8);
  s += static_cast<char>(0);
  s += static_cast<char>(orientation);
  s += std::string("\0\0\0\0\0\0", 6);  // the value's padding, then no next IFD
  return s;
}

bool jpeg_segment_kept(std::uint32_t marker, std::string_view body) {
  if (marker == 0xFE) return false;                      // a comment
  if (marker < 0xE0 || marker > 0xEF) return true;       // not an application segment
  if (marker == 0xE0) return body.substr(0, 5) == std::string_view("JFIF\0", 5);
  if (marker == 0xE2) return body.substr(0, 12) == std::string_view("ICC_PROFILE\0", 12);
  return marker == 0xEE && body.substr(0, 5) == "Adobe";
}

// Entropy-coded data from `i`: where the next marker starts (b.size() when the data runs to the end).
std::size_t scan_end(std::string_view b, std::size_t i) {
  while (i < b.size()) {
    if (byte_at(b, i) != 0xFF) {
      ++i;
      continue;
    }
    if (i + 1 >= b.size()) return b.size();
    const std::uint32_t next = byte_at(b, i + 1);
    if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) i += 2;  // a stuffed byte or a restart
    else if (next == 0xFF) ++i;                                   // fill before a marker
    else return i;
  }
  return i;
}

Kept jpeg(std::string_view b) {
  std::string out("\xFF\xD8", 2);
  std::size_t insert_at = 2;  // where a kept orientation goes: after a leading JFIF segment
  unsigned orientation = 0;
  bool dropped = false, framed = false;
  std::size_t i = 2;
  while (i < b.size()) {
    if (byte_at(b, i) != 0xFF) return std::nullopt;
    while (i < b.size() && byte_at(b, i) == 0xFF) ++i;
    if (i >= b.size()) break;
    const std::uint32_t marker = byte_at(b, i++);
    if (marker == 0xD9) {  // the end of the image: what follows is no part of it
      out += "\xFF\xD9";
      dropped = dropped || i < b.size();
      break;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      out += '\xFF';
      out += static_cast<char>(marker);
      continue;
    }
    // 0x00 is a stuffed byte, 0x02-0xBF are reserved: no segment starts so (once a segment dropped
    // before it joins it to a scan's data, it would read as that data).
    if (marker < 0xC0) return std::nullopt;
    if (i + 2 > b.size()) return std::nullopt;
    const std::size_t length = be16(b, i);
    if (length < 2 || length > b.size() - i) return std::nullopt;
    const std::string_view body = b.substr(i + 2, length - 2);
    const std::size_t next = i + length;
    // As probe_image reads it: the first Exif orientation before the frame header turns the image.
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) framed = true;
    if (!jpeg_segment_kept(marker, body)) {
      dropped = true;
      if (marker == 0xE1 && orientation == 0 && !framed) orientation = exif_orientation(body);
      i = next;
      continue;
    }
    const bool leading = out.size() == 2;
    out += b.substr(i - 2, length + 2);
    if (marker == 0xE0 && leading) insert_at = out.size();  // only a JFIF segment that opens the file
    i = next;
    if (marker == 0xDA) {  // a scan: its data runs to the next marker
      const std::size_t end = scan_end(b, i);
      out += b.substr(i, end - i);
      i = end;
    }
  }
  if (!dropped) return std::string();
  if (orientation >= 2 && orientation <= 8) out.insert(insert_at, orientation_segment(orientation));
  return out;
}

// ---- PNG ----

bool png_chunk_kept(std::string_view type) {
  for (std::string_view metadata : {"tEXt", "zTXt", "iTXt", "eXIf", "tIME", "caBX"})
    if (type == metadata) return false;
  return true;
}

Kept png(std::string_view b) {
  std::string out(b.substr(0, 8));
  bool dropped = false;
  std::size_t i = 8;
  while (i < b.size()) {
    if (b.size() - i < 12) return std::nullopt;
    const std::size_t length = be32(b, i);
    if (length > b.size() - i - 12) return std::nullopt;
    const std::string_view type = b.substr(i + 4, 4);
    const std::size_t next = i + 12 + length;
    if (png_chunk_kept(type)) out += b.substr(i, next - i);
    else dropped = true;
    i = next;
    if (type == "IEND") {
      dropped = dropped || i < b.size();
      break;
    }
  }
  if (!dropped) return std::string();
  return out;
}

// ---- WebP ----

Kept webp(std::string_view b) {
  // The RIFF's own length says where the file ends; bytes past it are not the image's.
  const std::size_t end = std::min<std::size_t>(b.size(), std::size_t(le32(b, 4)) + 8);
  if (end < 20) return std::nullopt;  // not even one chunk's header inside the RIFF
  std::string out(b.substr(0, 12));
  bool dropped = end < b.size();
  std::optional<std::size_t> flags;  // the VP8X flags byte in `out`
  std::size_t i = 12;
  while (i < end) {
    if (end - i < 8) return std::nullopt;
    const std::string_view type = b.substr(i, 4);
    const std::size_t length = le32(b, i + 4);
    if (length > end - i - 8) return std::nullopt;
    // Chunks are padded to an even length; a last chunk may lack its pad.
    const std::size_t next = std::min(end, i + 8 + length + (length & 1));
    if (type == "EXIF" || type == "XMP ") {
      dropped = true;
    } else {
      if (type == "VP8X" && length >= 1) flags = out.size() + 8;
      out += b.substr(i, next - i);
    }
    i = next;
  }
  if (!dropped) return std::string();
  if (out.size() == 12) return std::nullopt;  // nothing but metadata: no picture at all
  if (flags) out[*flags] = static_cast<char>(byte_at(out, *flags) & ~0x0Cu);  // no EXIF (0x08), no XMP (0x04)
  put_le32(out, 4, static_cast<std::uint32_t>(out.size() - 8));
  return out;
}

// ---- GIF ----

// Sub-blocks from `i` up to their terminator: the index after it, nullopt when they run past the end.
std::optional<std::size_t> sub_blocks_end(std::string_view b, std::size_t i) {
  for (;;) {
    if (i >= b.size()) return std::nullopt;
    const std::size_t n = byte_at(b, i++);
    if (n == 0) return i;
    if (n > b.size() - i) return std::nullopt;
    i += n;
  }
}

std::size_t colour_table_bytes(std::uint32_t packed) { return packed & 0x80 ? 3u << ((packed & 7) + 1) : 0; }

bool gif_extension_kept(std::string_view b, std::size_t i) {
  const std::uint32_t label = byte_at(b, i + 1);
  if (label == 0xFE) return false;   // a comment
  if (label != 0xFF) return true;    // graphic control, plain text
  // An application extension: its first sub-block is the 11-byte application name.
  if (i + 3 + 11 > b.size() || byte_at(b, i + 2) != 11) return false;
  const std::string_view app = b.substr(i + 3, 11);
  return app == "NETSCAPE2.0" || app == "ANIMEXTS1.0" || app == "ICCRGBG1012";
}

Kept gif(std::string_view b) {
  if (b.size() < 13) return std::nullopt;
  std::size_t i = 13 + colour_table_bytes(byte_at(b, 10));
  if (i > b.size()) return std::nullopt;
  std::string out(b.substr(0, i));
  bool dropped = false;
  while (i < b.size()) {
    const std::uint32_t kind = byte_at(b, i);
    if (kind == 0x3B) {  // the trailer
      out += ';';
      dropped = dropped || i + 1 < b.size();
      break;
    }
    std::optional<std::size_t> next;
    bool kept = true;
    if (kind == 0x2C) {  // an image: descriptor, local colour table, LZW code size, data
      if (b.size() - i < 10) return std::nullopt;
      const std::size_t data = i + 10 + colour_table_bytes(byte_at(b, i + 9)) + 1;
      if (data > b.size()) return std::nullopt;
      next = sub_blocks_end(b, data);
    } else if (kind == 0x21) {
      if (b.size() - i < 2) return std::nullopt;
      kept = gif_extension_kept(b, i);
      next = sub_blocks_end(b, i + 2);
    } else {
      return std::nullopt;
    }
    if (!next) return std::nullopt;
    if (kept) out += b.substr(i, *next - i);
    else dropped = true;
    i = *next;
  }
  if (!dropped) return std::string();
  return out;
}

} // namespace

bool strip_image_metadata(std::string& bytes, std::string_view media_type) {
  Kept kept;
  if (media_type == "image/jpeg") kept = jpeg(bytes);
  else if (media_type == "image/png") kept = png(bytes);
  else if (media_type == "image/webp") kept = bytes.size() >= 12 ? webp(bytes) : std::nullopt;
  else if (media_type == "image/gif") kept = gif(bytes);
  if (!kept) return false;
  if (!kept->empty()) bytes = std::move(*kept);
  return true;
}

} // namespace acp::support
