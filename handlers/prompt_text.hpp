// Renders a session/prompt's content blocks into the user's readable text (the text the model and
// the log receive) and collects the session references it mentions. Pure; throws RpcError (-32602
// with the block's JSON Pointer) for blocks we do not accept (images, audio, blob resources: not
// advertised) and prompts with no visible text, and refs::SessionReferenceError for malformed
// session mentions.
//
// References come from Markdown mentions `@[label](dsh-session:…)` and bare canonical URIs in text
// blocks, and from resource_link / embedded resource blocks whose URI is a dsh-session: URI (label:
// the link's name, or the id when the name is empty or absent). Each becomes readable `@label` text.
#pragma once

#include "protocol/types/content.hpp"
#include "refs/types.hpp"

#include <string>
#include <vector>

namespace acp::handlers {

struct RenderedPrompt {
  std::string text;                               ///< readable text, mentions as `@label`
  std::vector<refs::SessionReference> references;  ///< in appearance order, duplicates kept
};

RenderedPrompt render_prompt(const std::vector<protocol::ContentBlock>& prompt);

/// True if `text` has nothing but whitespace (JavaScript's \s set).
bool is_blank(std::string_view text);

} // namespace acp::handlers
