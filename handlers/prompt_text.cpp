#include "prompt_text.hpp"

#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "refs/uri.hpp"
#include "store/attachments.hpp"
#include "support/image_metadata.hpp"
#include "support/text_class.hpp"
#include "support/utf8.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <iterator>

namespace acp::handlers {

namespace {

std::string json_string(const std::string& s) { return boost::json::serialize(boost::json::string(s)); }

// Decodes one UTF-8 code point at text[i]; returns its length (U+FFFD for malformed bytes).
std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& cp) {
  const auto decoded = support::decode_utf8(text, i);
  cp = decoded.cp;
  return decoded.length;
}

} // namespace

bool is_blank(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    i += decode_utf8(text, i, cp);
    if (!support::is_js_whitespace(cp)) return false;
  }
  return true;
}

namespace {

constexpr std::string_view kSessionScheme = "dsh-session:";

bool is_session_uri(std::string_view uri) { return uri.substr(0, kSessionScheme.size()) == kSessionScheme; }

// A dsh-session: link or resource: a reference rendered as readable `@label`.
// The URI may carry an anchor (`#seq=N`), as in a mention.
void add_link_reference(RenderedPrompt& out, const std::string& uri, const std::optional<std::string>& name) {
  refs::ReferenceUri ref = refs::decode_reference_uri(uri);
  std::string label = name && !name->empty() ? *name : ref.session_id;
  out.text += "@" + label;
  out.references.push_back(refs::SessionReference{std::move(ref.session_id), label, ref.anchor_seq});
}

} // namespace

namespace {

std::string mib(std::size_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

// An image block checked as the harness's attachment store admits one: one of its four types, in
// canonical base64, within our bounds, and bytes that are what the mimeType says.
support::PlacedImage admit_image(const protocol::ImageContent& block, const std::string& where, std::size_t& total) {
  constexpr std::string_view kTypes[] = {"image/png", "image/jpeg", "image/webp", "image/gif"};
  if (std::find(std::begin(kTypes), std::end(kTypes), block.mimeType) == std::end(kTypes))
    throw jsonrpc::invalid_params(where + "/mimeType", "image mimeType must be image/png, image/jpeg, image/webp or image/gif");
  // Sized from the text before decoding: a 60 MB frame of base64 is refused without a copy.
  if (block.data.size() / 4 * 3 > kMaxImageBytes + 2)
    throw jsonrpc::invalid_params(where + "/data", "the image is larger than " + mib(kMaxImageBytes) + " (the limit per image)");
  std::optional<std::string> bytes = support::base64_decode(block.data);
  if (!bytes) throw jsonrpc::invalid_params(where + "/data", "image data must be canonical base64");
  if (bytes->empty()) throw jsonrpc::invalid_params(where + "/data", "the image is empty");
  if (bytes->size() > kMaxImageBytes)
    throw jsonrpc::invalid_params(where + "/data", "the image is larger than " + mib(kMaxImageBytes) + " (the limit per image)");
  total += bytes->size();
  if (total > kMaxPromptImageBytes)
    throw jsonrpc::invalid_params(where + "/data", "the prompt's images are larger than " + mib(kMaxPromptImageBytes) +
                                                      " together (the limit per prompt)");
  const std::optional<support::ImageHeader> header = support::probe_image(*bytes);
  if (!header || header->media_type != block.mimeType)
    throw jsonrpc::invalid_params(where + "/data", "the image data is not a valid " + block.mimeType + " image");
  if (header->width > kMaxImageSide || header->height > kMaxImageSide)
    throw jsonrpc::invalid_params(where + "/data", "the image is " + std::to_string(header->width) + "x" +
                                                      std::to_string(header->height) + " pixels, more than " +
                                                      std::to_string(kMaxImageSide) + " on a side");
  // Where and by whom a picture was taken stays here: neither stored nor sent (support/image_metadata.hpp).
  if (!support::strip_image_metadata(*bytes, header->media_type))
    throw jsonrpc::invalid_params(where + "/data", "the image data is not a valid " + block.mimeType +
                                                      " image: its structure is damaged or cut short");
  std::string name = block.uri ? store::attachment_display_name(*block.uri) : std::string();
  return support::PlacedImage{0, *header, std::move(*bytes), std::move(name)};
}

} // namespace

RenderedPrompt render_prompt(const std::vector<protocol::ContentBlock>& prompt) {
  using namespace protocol;
  RenderedPrompt out;
  std::string& text = out.text;
  std::size_t image_bytes = 0;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    std::string where = "/prompt/" + std::to_string(i);
    std::visit([&](const auto& block) {
      using B = std::decay_t<decltype(block)>;
      if constexpr (std::is_same_v<B, TextContent>) {
        refs::ParsedText parsed = refs::parse_text(block.text);
        if (text.empty()) text = std::move(parsed.text);  // the usual single text block: no copy
        else text += parsed.text;
        for (auto& r : parsed.references) out.references.push_back(refs::SessionReference{r.session_id, r.label, r.anchor_seq});
      } else if constexpr (std::is_same_v<B, ResourceLink>) {
        if (is_session_uri(block.uri)) return add_link_reference(out, block.uri, block.name);
        text += "\n[resource_link name=" + json_string(block.name) + " uri=" + json_string(block.uri) + "]\n";
      } else if constexpr (std::is_same_v<B, EmbeddedResource>) {
        if (is_session_uri(block.resource.uri)) return add_link_reference(out, block.resource.uri, std::nullopt);
        if (!block.resource.text || block.resource.blob)
          throw jsonrpc::invalid_params(where + "/resource", "binary (blob) resources are not supported");
        text += "\n[resource uri=" + json_string(block.resource.uri) + "]\n" + *block.resource.text + "\n";
      } else if constexpr (std::is_same_v<B, ImageContent>) {
        if (out.images.size() == kMaxPromptImages)
          throw jsonrpc::invalid_params(where, "a prompt carries at most " + std::to_string(kMaxPromptImages) + " images");
        out.images.push_back(admit_image(block, where, image_bytes));
        out.images.back().at = text.size();
      } else {
        throw jsonrpc::invalid_params(where + "/type", "audio content is not supported (promptCapabilities.audio is false)");
      }
    }, prompt[i]);
  }
  if (is_blank(text) && out.images.empty()) throw jsonrpc::invalid_params("/prompt", "the prompt has no text");
  return out;
}

} // namespace acp::handlers
