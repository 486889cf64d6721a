// Renders a session/prompt's content blocks into the user's readable text (the text the model and
// the log receive) and collects the session references it mentions and the images it carries. Pure;
// throws RpcError (-32602 with the block's JSON Pointer) for blocks we do not accept (audio, blob
// resources: not advertised; images that are not PNG, JPEG, WebP or GIF, whose bytes are not what
// their mimeType says, or beyond the bounds below) and prompts with neither visible text nor an
// image, and refs::SessionReferenceError for malformed session mentions.
//
// References come from Markdown mentions `@[label](dsh-session:…)` and bare canonical URIs in text
// blocks, and from resource_link / embedded resource blocks whose URI is a dsh-session: URI (label:
// the link's name, or the id when the name is empty or absent). Each becomes readable `@label` text.
// Any of them may point at a place in the session with `#seq=N` after the URI (refs/uri.hpp).
#pragma once

#include "protocol/types/content.hpp"
#include "refs/types.hpp"
#include "support/image.hpp"

#include <cstddef>
#include <cstdint>

#include <string>
#include <vector>

namespace acp::handlers {

/// Bounds on a prompt's images (decoded bytes; a side as the header states it, the harness's own limit).
inline constexpr std::size_t kMaxImageBytes = 5 * 1024 * 1024;
inline constexpr std::size_t kMaxPromptImageBytes = 20 * 1024 * 1024;
inline constexpr std::size_t kMaxPromptImages = 20;
inline constexpr std::uint32_t kMaxImageSide = 8192;

struct RenderedPrompt {
  std::string text;                               ///< readable text, mentions as `@label`
  std::vector<refs::SessionReference> references;  ///< in appearance order, duplicates kept
  std::vector<support::PlacedImage> images;        ///< in order, each placed in `text`
};

RenderedPrompt render_prompt(const std::vector<protocol::ContentBlock>& prompt);

/// True if `text` has nothing but whitespace (JavaScript's \s set).
bool is_blank(std::string_view text);

} // namespace acp::handlers
