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
