// Renders a session/prompt's content blocks into the user's readable text (the text the model and
// the log receive). Pure; throws RpcError (-32602 with the block's JSON Pointer) for blocks we do not
// accept: images, audio and blob resources (not advertised), and prompts with no visible text.
#pragma once

#include "protocol/types/content.hpp"

#include <string>
#include <vector>

namespace acp::handlers {

std::string render_prompt_text(const std::vector<protocol::ContentBlock>& prompt);

/// True if `text` has nothing but whitespace (JavaScript's \s set).
bool is_blank(std::string_view text);

} // namespace acp::handlers
