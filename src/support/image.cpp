#include "support/image.hpp"

#include "support/byte_order.hpp"

#include <array>

namespace acp::support {

using namespace bytes;

namespace {

std::optional<ImageHeader> sized(std::string_view type, std::uint32_t width, std::uint32_t height) {
  if (width == 0 || height == 0) return std::nullopt;
  return ImageHeader{type, width, height};
}

std::optional<ImageHeader> png(std::string_view b) {
  // The signature, then IHDR, which the format requires to come first.
  if (b.size() < 24 || b.substr(12, 4) != "IHDR" || be32(b, 8) != 13) return std::nullopt;
  const std::uint32_t width = be32(b, 16), height = be32(b, 20);
  if (width > 0x7FFFFFFFu || height > 0x7FFFFFFFu) return std::nullopt;
  return sized("image/png", width, height);
}

std::optional<ImageHeader> gif(std::string_view b) {
  // The logical screen: what the whole animation is drawn on, and what decoders report.
  if (b.size() < 10) return std::nullopt;
  return sized("image/gif", le16(b, 6), le16(b, 8));
}

std::optional<ImageHeader> webp(std::string_view b) {
  if (b.size() < 30) return std::nullopt;
  const std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {
    // A key frame's tag (bit 0 clear), its start code, then 14-bit sides.
    if ((byte_at(b, 20) & 1) != 0 || b.substr(23, 3) != std::string_view("\x9d\x01\x2a", 3)) return std::nullopt;
    return sized("image/webp", le16(b, 26) & 0x3FFF, le16(b, 28) & 0x3FFF);
  }
  if (chunk == "VP8L") {
    if (byte_at(b, 20) != 0x2F) return std::nullopt;
    const std::uint32_t bits = le32(b, 21);
    return sized("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (chunk == "VP8X") return sized("image/webp", le24(b, 24) + 1, le24(b, 27) + 1);
  return std::nullopt;
}

std::optional<ImageHeader> jpeg(std::string_view b) {
  unsigned orientation = 0;
  std::size_t i = 2;
  while (i < b.size()) {
    if (byte_at(b, i) != 0xFF) return std::nullopt;
    while (i < b.size() && byte_at(b, i) == 0xFF) ++i;  // fill bytes
    if (i >= b.size()) return std::nullopt;
    const std::uint32_t marker = byte_at(b, i++);
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
    if (marker == 0xD9 || marker == 0xDA || i + 2 > b.size()) return std::nullopt;  // pixels before a frame header
    const std::size_t length = be16(b, i);
    if (length < 2 || length > b.size() - i) return std::nullopt;
    const std::string_view body = b.substr(i + 2, length - 2);
    const bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (body.size() < 5) return std::nullopt;
      std::uint32_t height = be16(body, 1), width = be16(body, 3);
      // Orientations 5–8 transpose the stored raster: a viewer (and the harness) shows it turned.
      if (orientation >= 5 && orientation <= 8) std::swap(width, height);
      return sized("image/jpeg", width, height);
    }
    if (marker == 0xE1 && orientation == 0) orientation = exif_orientation(body);
    i += length;
  }
  return std::nullopt;
}

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<signed char, 256> decoding_table() {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  return t;
}

} // namespace

unsigned exif_orientation(std::string_view seg) {
  if (seg.size() < 14 || seg.substr(0, 6) != std::string_view("Exif\0\0", 6)) return 0;
  const std::string_view tiff = seg.substr(6);
  const bool little = tiff.substr(0, 2) == "II";
  if (!little && tiff.substr(0, 2) != "MM") return 0;
  auto u16 = [&](std::size_t i) { return little ? le16(tiff, i) : be16(tiff, i); };
  auto u32 = [&](std::size_t i) { return little ? le32(tiff, i) : be32(tiff, i); };
  if (u16(2) != 42) return 0;
  const std::size_t ifd = u32(4);
  if (ifd > tiff.size() || tiff.size() - ifd < 2) return 0;
  const std::size_t entries = u16(ifd);
  for (std::size_t e = 0; e < entries; ++e) {
    const std::size_t at = ifd + 2 + e * 12;
    if (at > tiff.size() || tiff.size() - at < 12) return 0;
    if (u16(at) == 0x0112 && u16(at + 2) == 3) return u16(at + 8);
  }
  return 0;
}

std::optional<ImageHeader> probe_image(std::string_view b) {
  if (b.size() >= 8 && b.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return png(b);
  if (b.size() >= 3 && b.substr(0, 3) == std::string_view("\xff\xd8\xff", 3)) return jpeg(b);
  if (b.size() >= 6 && (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a")) return gif(b);
  if (b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") return webp(b);
  return std::nullopt;
}

std::optional<std::string> base64_decode(std::string_view text) {
  static constexpr std::array<signed char, 256> table = decoding_table();
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  const std::size_t data = text.size() - padding;
  for (std::size_t i = 0; i < data; ++i) {
    const signed char v = table[static_cast<unsigned char>(text[i])];
    if (v < 0) return std::nullopt;
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<char>(acc >> 16));
      out.push_back(static_cast<char>(acc >> 8));
      out.push_back(static_cast<char>(acc));
      acc = 0;
    }
  }
  // The last group: its unused low bits must be zero, or another text decodes to the same bytes.
  if (padding == 2) {
    if ((acc & 0xF) != 0) return std::nullopt;
    out.push_back(static_cast<char>(acc >> 4));
  } else if (padding == 1) {
    if ((acc & 0x3) != 0) return std::nullopt;
    out.push_back(static_cast<char>(acc >> 10));
    out.push_back(static_cast<char>(acc >> 2));
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = byte_at(bytes, i) << 16 | byte_at(bytes, i + 1) << 8 | byte_at(bytes, i + 2);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    const std::uint32_t v = byte_at(bytes, i) << 16 | (rest == 2 ? byte_at(bytes, i + 1) << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

} // namespace acp::support
