// Raster images as prompts carry them: strict base64, and a header reader for the four types the
// harness's attachment store takes (PNG, JPEG, WebP, GIF). The reader decodes no pixels: it proves
// the bytes start as the type says and reads the dimensions the harness records (and checks when it
// reads an object back), so a JPEG whose EXIF orientation turns it (5–8) reports its sides swapped,
// as a viewer shows it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::support {

struct ImageHeader {
  std::string_view media_type;  ///< "image/png", "image/jpeg", "image/webp" or "image/gif"
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

/// An image a prompt carries, checked, and where in the prompt's text it stands.
struct PlacedImage {
  std::size_t at = 0;  ///< its place in the text: between text[at - 1] and text[at]
  ImageHeader header;  ///< media_type points at a literal
  std::string bytes;
  std::string name;  ///< display name ("" = none)
};

/// The type and dimensions the header of `bytes` states; nullopt when the bytes are none of the four
/// types, the header is cut short, or it states a zero side.
std::optional<ImageHeader> probe_image(std::string_view bytes);

/// The orientation (tag 0x0112, 1-8) in the first IFD of a JPEG APP1 segment's body that holds Exif;
/// 0 when it holds none.
unsigned exif_orientation(std::string_view app1_body);

/// Canonical RFC 4648 base64 (padding required, no whitespace, no URL alphabet, zero unused bits),
/// as the harness admits it; nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

} // namespace acp::support
