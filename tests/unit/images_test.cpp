// Prompt images: the header reader (src/support/image.hpp) on real PNG, JPEG, GIF and WebP bytes
// built here and on cut or lying headers; strict base64; the attachment store (save, verified read,
// the harness's layout); the prompt's admission (handlers/prompt_text.hpp); the conversation's
// image places and their loading.
#include "../common/temp_dir.hpp"
#include "engine/conversation.hpp"
#include "handlers/prompt_text.hpp"
#include "protocol/jsonrpc.hpp"
#include "store/attachments.hpp"
#include "support/hex.hpp"
#include "support/image.hpp"
#include "support/image_metadata.hpp"
#include "support/sha256.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

using namespace acp;
namespace json = boost::json;

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}
void put_le16(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>((v >> 8) & 0xFF);
}
void put_le32(std::string& out, std::uint32_t v) {
  put_le16(out, v & 0xFFFF);
  put_le16(out, v >> 16);
}

std::uint32_t crc32(std::string_view bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void png_chunk(std::string& out, std::string_view type, std::string_view data) {
  put_be32(out, static_cast<std::uint32_t>(data.size()));
  std::string body = std::string(type) + std::string(data);
  out += body;
  put_be32(out, crc32(body));
}

// A complete, decodable RGB PNG: IHDR, one IDAT holding a stored (uncompressed) zlib stream, IEND.
std::string png(std::uint32_t width, std::uint32_t height) {
  std::string raw;
  for (std::uint32_t y = 0; y < height; ++y) {
    raw += '\0';  // filter: none
    for (std::uint32_t x = 0; x < width; ++x) raw += std::string{static_cast<char>(x * 40), static_cast<char>(y * 60), '\x80'};
  }
  std::string zlib = "\x78\x01";
  zlib += '\x01';  // final stored block
  put_le16(zlib, static_cast<std::uint32_t>(raw.size()));
  put_le16(zlib, static_cast<std::uint32_t>(~raw.size() & 0xFFFF));
  zlib += raw;
  std::uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  put_be32(zlib, b << 16 | a);
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  std::string out("\x89PNG\r\n\x1a\n", 8);
  png_chunk(out, "IHDR", ihdr);
  png_chunk(out, "IDAT", zlib);
  png_chunk(out, "IEND", "");
  return out;
}

// A GIF89a with a two-colour table and one 1x1 image on a `width` x `height` screen.
std::string gif(std::uint32_t width, std::uint32_t height) {
  std::string out = "GIF89a";
  put_le16(out, width);
  put_le16(out, height);
  out += std::string("\x80\x00\x00\xff\xff\xff\x00\x00\x00", 9);
  out += std::string("\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b", 16);
  return out;
}

// A baseline JPEG's headers up to its scan (SOI, APP0 or an Exif APP1 with `orientation`, DQT,
// SOF0, SOS): what a reader sees before any entropy-coded data.
std::string jpeg(std::uint32_t width, std::uint32_t height, unsigned orientation = 0) {
  std::string out("\xff\xd8", 2);
  if (orientation) {
    std::string exif("Exif\0\0MM\0\x2a\0\0\0\x08", 14);
    exif += std::string("\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01", 10);
    exif += static_cast<char>(0);
    exif += static_cast<char>(orientation);
    exif += std::string("\0\0\0\0\0\0", 6);
    out += "\xff\xe1";
    out += static_cast<char>(((exif.size() + 2) >> 8) & 0xFF);
    out += static_cast<char>((exif.size() + 2) & 0xFF);
    out += exif;
  } else {
    out += std::string("\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 18);
  }
  out += std::string("\xff\xdb\x00\x43\x00", 5) + std::string(64, '\x01');
  out += std::string("\xff\xc0\x00\x0b\x08", 5);
  out += static_cast<char>(height >> 8);
  out += static_cast<char>(height & 0xFF);
  out += static_cast<char>(width >> 8);
  out += static_cast<char>(width & 0xFF);
  out += std::string("\x01\x01\x11\x00", 4);
  out += std::string("\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00", 10);
  out += std::string("\xd2\xcf\x20\xff\xd9", 5);
  return out;
}

std::string riff(std::string_view chunk, std::string_view data) {
  std::string body = "WEBP" + std::string(chunk);
  put_le32(body, static_cast<std::uint32_t>(data.size()));
  body += data;
  if (data.size() % 2) body += '\0';
  std::string out = "RIFF";
  put_le32(out, static_cast<std::uint32_t>(body.size()));
  return out + body;
}

// Lossless WebP: the VP8L signature and 14-bit sides minus one, then a tiny bitstream.
std::string webp_lossless(std::uint32_t width, std::uint32_t height) {
  std::string data = "\x2f";
  put_le32(data, (width - 1) | (height - 1) << 14);
  data += std::string("\x00\x07\x10\x11\x11\x88\x88\xfe\x07\x00", 10);
  return riff("VP8L", data);
}

// Lossy WebP: a key frame's tag, the start code and the sides.
std::string webp_lossy(std::uint32_t width, std::uint32_t height) {
  std::string data("\x50\x01\x00\x9d\x01\x2a", 6);
  put_le16(data, width);
  put_le16(data, height);
  data += std::string(8, '\0');
  return riff("VP8 ", data);
}

std::string webp_extended(std::uint32_t width, std::uint32_t height) {
  std::string data(4, '\0');
  data += static_cast<char>((width - 1) & 0xFF);
  data += static_cast<char>(((width - 1) >> 8) & 0xFF);
  data += static_cast<char>(((width - 1) >> 16) & 0xFF);
  data += static_cast<char>((height - 1) & 0xFF);
  data += static_cast<char>(((height - 1) >> 8) & 0xFF);
  data += static_cast<char>(((height - 1) >> 16) & 0xFF);
  return riff("VP8X", data);
}

void check(const std::string& bytes, std::string_view type, std::uint32_t width, std::uint32_t height) {
  const auto header = support::probe_image(bytes);
  BOOST_REQUIRE(header.has_value());
  BOOST_TEST(header->media_type == type);
  BOOST_TEST(header->width == width);
  BOOST_TEST(header->height == height);
}

std::string sha256_hex(std::string_view bytes) {
  const auto d = support::Sha256().update(bytes).digest();
  return support::hex_encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

protocol::ImageContent image_block(std::string_view bytes, std::string mime) {
  return protocol::ImageContent{support::base64_encode(bytes), std::move(mime), std::nullopt, std::nullopt, {}};
}

int rpc_code(const std::vector<protocol::ContentBlock>& prompt, std::string& message) {
  try {
    handlers::render_prompt(prompt);
  } catch (const jsonrpc::RpcError& e) {
    message = e.what();
    return e.code();
  }
  return 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(image_header)

BOOST_AUTO_TEST_CASE(reads_the_four_types) {
  check(png(3, 2), "image/png", 3, 2);
  check(gif(5, 4), "image/gif", 5, 4);
  check(jpeg(640, 480), "image/jpeg", 640, 480);
  check(webp_lossless(17, 9), "image/webp", 17, 9);
  check(webp_lossy(300, 200), "image/webp", 300, 200);
  check(webp_extended(70000, 3), "image/webp", 70000, 3);
}

BOOST_AUTO_TEST_CASE(jpeg_exif_orientation_turns_the_sides) {
  check(jpeg(640, 480, 1), "image/jpeg", 640, 480);
  check(jpeg(640, 480, 3), "image/jpeg", 640, 480);
  check(jpeg(640, 480, 6), "image/jpeg", 480, 640);
  check(jpeg(640, 480, 8), "image/jpeg", 480, 640);
}

BOOST_AUTO_TEST_CASE(cut_short_headers_are_refused) {
  // Every prefix that stops before the header holding the sides ends is refused, never read past its end.
  const std::pair<std::string, std::size_t> cases[] = {{png(3, 2), 24},
                                                       {gif(5, 4), 10},
                                                       {jpeg(640, 480), 2 + 18 + 69 + 13},
                                                       {webp_lossless(17, 9), 30},
                                                       {webp_lossy(30, 20), 30}};
  for (const auto& [whole, sides_end] : cases) {
    BOOST_TEST(support::probe_image(whole.substr(0, sides_end)).has_value());
    for (std::size_t n = 0; n < sides_end; ++n)
      BOOST_TEST(!support::probe_image(whole.substr(0, n)).has_value(), "prefix of " << n << " bytes");
  }
}

BOOST_AUTO_TEST_CASE(lying_headers_are_refused) {
  std::string not_ihdr = png(3, 2);
  not_ihdr.replace(12, 4, "IDAT");
  BOOST_TEST(!support::probe_image(not_ihdr).has_value());
  BOOST_TEST(!support::probe_image(png(0, 2)).has_value());  // a zero side
  BOOST_TEST(!support::probe_image(gif(0, 4)).has_value());
  // A JPEG whose scan comes before any frame header, and one whose segment runs past the end.
  std::string no_frame("\xff\xd8\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00", 12);
  BOOST_TEST(!support::probe_image(no_frame).has_value());
  std::string long_segment("\xff\xd8\xff\xe0\x40\x00JFIF", 10);
  BOOST_TEST(!support::probe_image(long_segment).has_value());
  std::string bad_start = webp_lossy(30, 20);
  bad_start[23] = '\0';  // no start code
  BOOST_TEST(!support::probe_image(bad_start).has_value());
  std::string bad_signature = webp_lossless(3, 3);
  bad_signature[20] = '\x2e';
  BOOST_TEST(!support::probe_image(bad_signature).has_value());
  BOOST_TEST(!support::probe_image("GIF90a\x01\x00\x01\x00").has_value());
  BOOST_TEST(!support::probe_image("BM\x36\x00\x00\x00").has_value());  // a BMP: not a type we take
  BOOST_TEST(!support::probe_image("").has_value());
}

BOOST_AUTO_TEST_CASE(base64_is_canonical) {
  for (std::string_view s : {"", "a", "ab", "abc", "abcd", "\xff\x00\x80"}) {
    const std::string encoded = support::base64_encode(s);
    const auto decoded = support::base64_decode(encoded);
    BOOST_REQUIRE(decoded.has_value());
    BOOST_TEST(*decoded == std::string(s));
  }
  BOOST_TEST(support::base64_encode("abc") == "YWJj");
  BOOST_TEST(support::base64_encode("ab") == "YWI=");
  BOOST_TEST(!support::base64_decode("YWI").has_value());     // no padding
  BOOST_TEST(!support::base64_decode("YWJ=").has_value());    // unused bits set
  BOOST_TEST(!support::base64_decode("YW J").has_value());    // whitespace
  BOOST_TEST(!support::base64_decode("YW-_").has_value());    // URL alphabet
  BOOST_TEST(!support::base64_decode("Y===").has_value());
  BOOST_TEST(!support::base64_decode("YQ==YQ==").has_value());  // padding inside
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(image_attachments)

BOOST_AUTO_TEST_CASE(saved_where_the_harness_keeps_them_and_read_back_verified) {
  acp::test::TempDir home("dsh-images");
  const std::string bytes = png(3, 2);
  const std::string hex = sha256_hex(bytes);
  const json::object ref = store::save_image(home.path(), bytes, "image/png", 3, 2, "shot.png");
  BOOST_TEST(json::serialize(ref) == "{\"attachmentId\":\"sha256:" + hex +
                                         "\",\"mediaType\":\"image/png\",\"width\":3,\"height\":2,\"bytes\":" +
                                         std::to_string(bytes.size()) + ",\"name\":\"shot.png\"}");
  const std::filesystem::path object = std::filesystem::path(home.path()) / "attachments/v1/objects" / hex.substr(0, 2) / hex;
  std::ifstream in(object, std::ios::binary);
  BOOST_TEST(std::string(std::istreambuf_iterator<char>(in), {}) == bytes);
  struct stat st {};
  BOOST_REQUIRE(::stat(object.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(std::filesystem::is_empty(std::filesystem::path(home.path()) / "attachments/v1/tmp"));  // the staging file is gone
  BOOST_TEST(store::read_image(home.path(), ref).value_or("") == bytes);
  // The same image again: the object is kept, the reference the same.
  BOOST_TEST(store::save_image(home.path(), bytes, "image/png", 3, 2, "shot.png") == ref);

  // A reference that does not match its object (size, type, dimensions) reads nothing.
  for (auto [key, value] : std::initializer_list<std::pair<const char*, json::value>>{
           {"bytes", 5}, {"mediaType", "image/gif"}, {"width", 4}, {"height", 1}}) {
    json::object lying = ref;
    lying[key] = value;
    BOOST_TEST(!store::read_image(home.path(), lying).has_value(), key);
  }
  // A damaged object neither reads nor is kept when the same image is saved again.
  { std::ofstream(object, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 1) << 'x'; }
  BOOST_TEST(!store::read_image(home.path(), ref).has_value());
  BOOST_CHECK_THROW(store::save_image(home.path(), bytes, "image/png", 3, 2, ""), std::exception);
  std::filesystem::remove(object);
  BOOST_TEST(!store::image_present(home.path(), ref));
  BOOST_TEST(!store::read_image(home.path(), ref).has_value());
}

BOOST_AUTO_TEST_CASE(display_names_are_leaf_names) {
  BOOST_TEST(store::attachment_display_name("file:///home/a/shot.png") == "shot.png");
  BOOST_TEST(store::attachment_display_name("C:\\Users\\a\\pic.jpg") == "pic.jpg");
  BOOST_TEST(store::attachment_display_name(" a\tb\x01 ") == "ab");
  BOOST_TEST(store::attachment_display_name("dir/") == "");
  BOOST_TEST(store::attachment_display_name(std::string(300, 'x')).size() == 255u);
}

// What a card shows is what the name says: no override reverses part of it, no invisible character
// hides in it, and the harness's limits (JavaScript's trim, 255 UTF-16 units) hold for any script.
BOOST_AUTO_TEST_CASE(display_names_lose_invisible_characters_and_keep_whole_characters) {
  // "invoice\u202Egnp.exe" shows as "invoiceexe.png" where the override is honoured.
  BOOST_TEST(store::attachment_display_name("invoice\u202Egnp.exe") == "invoicegnp.exe");
  BOOST_TEST(store::attachment_display_name("a\u2066b\u2069\u200Bc\u0085d\u009Be\uFEFF") == "abcde");
  // Unicode spaces are trimmed as JavaScript trims them; inner ones stay.
  BOOST_TEST(store::attachment_display_name("\u3000\u00A0shot 1.png\u2029") == "shot 1.png");
  // 255 UTF-16 units: 255 CJK characters (765 bytes), and a character outside the BMP (two units)
  // is left out whole when only one unit is left.
  std::string cjk;
  for (int i = 0; i < 300; ++i) cjk += "\u56FE";
  BOOST_TEST(store::attachment_display_name(cjk).size() == 255u * 3);
  BOOST_TEST(store::attachment_display_name(std::string(254, 'x') + "\U0001F600") == std::string(254, 'x'));
  BOOST_TEST(store::attachment_display_name(std::string(253, 'x') + "\U0001F600") ==
             std::string(253, 'x') + "\U0001F600");
}

BOOST_AUTO_TEST_SUITE_END()

// What a picture says about where and by whom it was taken (support/image_metadata.hpp): gone from
// each of the four types, with everything a viewer needs kept byte for byte.
BOOST_AUTO_TEST_SUITE(image_metadata)

using namespace std::string_view_literals;

std::string stripped(std::string bytes, std::string_view type) {
  BOOST_REQUIRE(support::strip_image_metadata(bytes, type));
  return bytes;
}

std::string jpeg_segment(char marker, std::string_view body) {
  std::string out("\xff", 1);
  out += marker;
  out += static_cast<char>(((body.size() + 2) >> 8) & 0xFF);
  out += static_cast<char>((body.size() + 2) & 0xFF);
  return out + std::string(body);
}

BOOST_AUTO_TEST_CASE(a_png_loses_its_texts_times_exif_and_what_follows_its_end) {
  const std::string clean = png(3, 2);
  const std::size_t idat = clean.find("IDAT") - 4;
  std::string tagged = clean.substr(0, idat);
  png_chunk(tagged, "tEXt", std::string("GPSPosition\0" "48.8584 N, 2.2945 E", 31));
  png_chunk(tagged, "iTXt", "XML:com.adobe.xmp\0\0\0\0\0<x:xmpmeta>Alice's phone</x:xmpmeta>"sv);
  png_chunk(tagged, "gAMA", std::string("\0\0\xb1\x8f", 4));  // rendering: kept
  png_chunk(tagged, "eXIf", "MM\0*GPS"sv);
  png_chunk(tagged, "tIME", std::string("\x07\xea\x0c\x07\x0c\x00\x00", 7));
  tagged += clean.substr(idat);
  tagged += "appended: serial 12345";
  const std::string out = stripped(tagged, "image/png");
  std::string expected = clean.substr(0, idat);
  png_chunk(expected, "gAMA", std::string("\0\0\xb1\x8f", 4));
  expected += clean.substr(idat);
  BOOST_TEST(out == expected);
  check(out, "image/png", 3, 2);
  // Nothing to take out: the same bytes.
  BOOST_TEST(stripped(clean, "image/png") == clean);
}

BOOST_AUTO_TEST_CASE(a_jpeg_loses_exif_xmp_comments_and_trailers_but_keeps_its_orientation) {
  const std::string plain = jpeg(40, 30);  // JFIF, tables, frame, scan, end
  BOOST_TEST(stripped(plain, "image/jpeg") == plain);
  // A phone's picture: Exif with GPS and the orientation 6 (turned: shows 30x40), XMP, IPTC, a
  // comment, an ICC profile (kept: colours depend on it), a second picture after the end.
  const std::string turned = jpeg(40, 30, 6);
  std::string exif("Exif\0\0MM\0\x2a\0\0\0\x08\0\x02", 16);
  exif += std::string("\x88\x25\x00\x04\x00\x00\x00\x01\x00\x00\x00\x26", 12);  // GPS IFD pointer
  exif += std::string("\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00", 12);  // orientation 6
  exif += std::string("\0\0\0\0", 4) + "GPS 48.8584N 2.2945E";
  const std::string icc = jpeg_segment('\xe2', std::string("ICC_PROFILE\0\x01\x01profile", 21));
  std::string phone("\xff\xd8", 2);
  phone += jpeg_segment('\xe1', exif);
  phone += jpeg_segment('\xe1', "http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>Alice</x:xmpmeta>"sv);
  phone += jpeg_segment('\xed', "Photoshop 3.0\0" "8BIM by-line: Alice"sv);
  phone += jpeg_segment('\xfe', "taken at home");
  phone += icc;
  const std::size_t tables = turned.find("\xff\xdb");
  phone += turned.substr(tables);  // DQT, SOF (40x30), SOS, scan, EOI
  phone += "\xff\xd8 a second picture, with its own Exif";
  check(phone, "image/jpeg", 30, 40);
  const std::string out = stripped(phone, "image/jpeg");
  for (std::string_view gone : {"GPS", "xmpmeta", "8BIM", "taken at home", "second picture"})
    BOOST_TEST(out.find(gone) == std::string::npos, gone);
  BOOST_TEST(out.find(icc) != std::string::npos);
  check(out, "image/jpeg", 30, 40);  // still turned
  // The orientation alone is what the Exif segment now says: the same segment jpeg() writes.
  BOOST_TEST(out == turned.substr(0, tables) + icc + turned.substr(tables));
}

BOOST_AUTO_TEST_CASE(a_jpeg_scan_is_copied_whole_through_stuffed_bytes_and_restarts) {
  std::string j = jpeg(8, 8);
  const std::size_t end = j.rfind("\xff\xd9");
  j.insert(end, std::string("\x12\xff\x00\x34\xff\xd0\x56\xff\xff\xd1\x78", 11));
  j.insert(end + 11, jpeg_segment('\xfe', "in between"));  // a comment between scan data and the end
  std::string expected = j;
  expected.erase(expected.find("\xff\xfe"), 4 + 10);
  BOOST_TEST(stripped(j, "image/jpeg") == expected);
}

BOOST_AUTO_TEST_CASE(a_webp_loses_its_exif_and_xmp_chunks_and_their_flags) {
  std::string w = webp_extended(5, 7);
  w[20] = '\x0c';  // VP8X flags: EXIF and XMP present
  auto chunk = [](std::string_view type, std::string_view data) {
    std::string c(type);
    put_le32(c, static_cast<std::uint32_t>(data.size()));
    c += data;
    if (data.size() % 2) c += '\0';
    return c;
  };
  const std::string image = chunk("VP8L", webp_lossless(5, 7).substr(20));
  w += image + chunk("EXIF", "MM\0*GPS 48.8N"sv) + chunk("XMP ", "<x:xmpmeta>Alice</x:xmpmeta>");
  std::string riff_size;
  put_le32(riff_size, static_cast<std::uint32_t>(w.size() - 8));
  w.replace(4, 4, riff_size);
  w += "trailing";
  const std::string out = stripped(w, "image/webp");
  std::string expected = webp_extended(5, 7) + image;
  put_le32(riff_size = "", static_cast<std::uint32_t>(expected.size() - 8));
  expected.replace(4, 4, riff_size);
  BOOST_TEST(out == expected);
  check(out, "image/webp", 5, 7);
  BOOST_TEST(stripped(webp_lossy(3, 3), "image/webp") == webp_lossy(3, 3));
}

BOOST_AUTO_TEST_CASE(a_gif_loses_comments_and_xmp_but_keeps_looping) {
  const std::string g = gif(4, 4);  // header, colour table, one image, trailer
  BOOST_TEST(stripped(g, "image/gif") == g);
  const std::size_t image = 13 + 6;
  const std::string loop("\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00", 19);
  std::string tagged = g.substr(0, image) + loop;
  tagged += std::string("\x21\xfe\x0ftaken by Alice!\x00", 19);                       // a comment
  tagged += std::string("\x21\xff\x0bXMP DataXMP\x06<Alice\x00", 22);                    // XMP
  tagged += g.substr(image) + "after the trailer";
  BOOST_TEST(stripped(tagged, "image/gif") == g.substr(0, image) + loop + g.substr(image));
}

BOOST_AUTO_TEST_CASE(a_damaged_structure_is_refused_and_left_alone) {
  std::string p = png(3, 2);
  p.resize(p.size() - 6);  // IEND cut short
  const std::string before = p;
  BOOST_TEST(!support::strip_image_metadata(p, "image/png"));
  BOOST_TEST(p == before);
  std::string j = jpeg(8, 8);
  j.insert(2, std::string("\xff\xe1\x7f\xff" "Exif", 8));  // a segment longer than the file
  BOOST_TEST(!support::strip_image_metadata(j, "image/jpeg"));
  std::string g = gif(4, 4);
  g.insert(19, "\x21\xfe\x30short");  // a comment block past the end
  g.resize(g.size() - 3);
  BOOST_TEST(!support::strip_image_metadata(g, "image/gif"));
  // Found by fuzzing: a "segment" opened by FF 00 (a stuffed byte, no marker) after an application
  // segment that follows a scan; once that segment went, the bytes read as scan data.
  std::string stuffed = jpeg(8, 8);
  stuffed.insert(stuffed.rfind("\xff\xd9"), jpeg_segment('\xe1', "Exif") + std::string("\xff\x00\x00\x04" "ab", 6));
  BOOST_TEST(!support::strip_image_metadata(stuffed, "image/jpeg"));
  // Found by fuzzing: a JFIF segment after the frame (kept, as every JFIF segment is) drew the kept
  // orientation after the frame header too, where no reader looks: the image turned back.
  std::string late = jpeg(40, 30, 6);
  late.insert(late.rfind("\xff\xd9"), std::string("\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 18));
  late.insert(2, jpeg_segment('\xfe', "comment"));
  check(stripped(late, "image/jpeg"), "image/jpeg", 30, 40);
  // Found by fuzzing: a WebP of nothing but metadata has no picture left.
  std::string bare = riff("XMP ", "<x:xmpmeta/>");
  BOOST_TEST(!support::strip_image_metadata(bare, "image/webp"));
  // A JPEG cut short inside its pixels is no damage: what there is stays.
  std::string cut = jpeg(8, 8);
  cut.resize(cut.size() - 2);
  BOOST_TEST(stripped(cut, "image/jpeg") == cut);
  // Admission: the image is refused, naming the block.
  std::string message;
  BOOST_TEST(rpc_code({image_block(before, "image/png")}, message) == -32602);
  BOOST_TEST(message.find("/prompt/0/data") != std::string::npos, message);
  BOOST_TEST(message.find("damaged") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(an_admitted_image_carries_no_metadata_into_the_prompt) {
  std::string tagged = png(3, 2);
  const std::string clean = tagged;
  tagged.insert(clean.find("IDAT") - 4, [] {
    std::string c;
    png_chunk(c, "tEXt", std::string("Location\0home", 13));
    return c;
  }());
  const handlers::RenderedPrompt out = handlers::render_prompt({image_block(tagged, "image/png")});
  BOOST_REQUIRE(out.images.size() == 1u);
  BOOST_TEST(out.images[0].bytes == clean);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(image_prompts)

BOOST_AUTO_TEST_CASE(images_are_placed_in_the_text) {
  const std::string picture = png(3, 2);
  std::vector<protocol::ContentBlock> prompt{protocol::TextContent{"look: ", std::nullopt, {}},
                                             image_block(picture, "image/png"),
                                             protocol::TextContent{"and this", std::nullopt, {}},
                                             image_block(gif(2, 2), "image/gif")};
  std::get<protocol::ImageContent>(prompt[1]).uri = "file:///tmp/shot.png";
  const handlers::RenderedPrompt out = handlers::render_prompt(prompt);
  BOOST_TEST(out.text == "look: and this");
  BOOST_REQUIRE(out.images.size() == 2u);
  BOOST_TEST(out.images[0].at == 6u);
  BOOST_TEST(out.images[0].bytes == picture);
  BOOST_TEST(out.images[0].name == "shot.png");
  BOOST_TEST(out.images[0].header.width == 3u);
  BOOST_TEST(out.images[1].at == out.text.size());
  BOOST_TEST(out.images[1].name == "");
  // An image alone is a prompt.
  BOOST_TEST(handlers::render_prompt({image_block(picture, "image/png")}).images.size() == 1u);
}

BOOST_AUTO_TEST_CASE(wrong_types_and_sizes_are_invalid_params) {
  std::string message;
  BOOST_TEST(rpc_code({image_block(png(3, 2), "image/jpeg")}, message) == -32602);
  BOOST_TEST(message.find("not a valid image/jpeg image") != std::string::npos, message);
  BOOST_TEST(rpc_code({image_block(png(3, 2), "image/bmp")}, message) == -32602);
  BOOST_TEST(rpc_code({image_block("not an image at all", "image/png")}, message) == -32602);
  BOOST_TEST(rpc_code({protocol::ImageContent{"iVBORw0KGgo", "image/png", std::nullopt, std::nullopt, {}}}, message) ==
             -32602);
  BOOST_TEST(message.find("canonical base64") != std::string::npos, message);
  std::string big = png(3, 2);
  big.resize(handlers::kMaxImageBytes + 1, '\0');
  BOOST_TEST(rpc_code({image_block(big, "image/png")}, message) == -32602);
  BOOST_TEST(message.find("5 MiB") != std::string::npos, message);
  std::string fits = big.substr(0, handlers::kMaxImageBytes);
  std::vector<protocol::ContentBlock> many(5, image_block(fits, "image/png"));
  BOOST_TEST(rpc_code(many, message) == -32602);
  BOOST_TEST(message.find("20 MiB") != std::string::npos, message);
  BOOST_TEST(rpc_code({image_block(png(8193, 1), "image/png")}, message) == -32602);
  BOOST_TEST(message.find("8192") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(the_conversation_keeps_their_places_and_loads_them) {
  acp::test::TempDir home("dsh-images");
  const std::string picture = png(3, 2);
  const json::object ref = store::save_image(home.path(), picture, "image/png", 3, 2, "");
  json::object gone = ref;
  gone["attachmentId"] = "sha256:" + std::string(64, 'a');
  engine::Conversation conversation;
  conversation.observe({{"type", "turn/start"}, {"seq", 0}, {"data", {{"turn", 1}}}});
  conversation.observe({{"type", "user/message"},
                        {"seq", 1},
                        {"data",
                         {{"content", json::array{{{"type", "text"}, {"text", "see "}},
                                                  {{"type", "image"}, {"attachment", ref}},
                                                  {{"type", "image"}, {"attachment", gone}}}},
                          {"source", {{"kind", "user"}}}}}});
  std::vector<llm::Message> messages = conversation.messages();
  BOOST_REQUIRE(messages.size() == 1u);
  const llm::Message& m = messages[0];
  BOOST_REQUIRE(m.images.size() == 2u);
  BOOST_TEST(m.text.substr(m.images[0].at, m.images[0].length) ==
             "[image: sha256:" + sha256_hex(picture) + ", image/png, " + std::to_string(picture.size()) + " bytes omitted]");
  BOOST_TEST(m.images[1].at == m.images[0].at + m.images[0].length);
  engine::load_images(messages, home.path());
  BOOST_REQUIRE(messages[0].images[0].data);
  BOOST_TEST(*messages[0].images[0].data == picture);
  BOOST_TEST(!messages[0].images[1].data);  // missing: its placeholder stands
}

BOOST_AUTO_TEST_SUITE_END()
