// Text for tool-call cards: titles and content lines are one line each (clients draw a title on one
// line, and a control character in it would break that or the line structure of the content).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace acp::handlers {

/// `text` with every control character (C0, DEL, C1) made a space.
std::string one_line(std::string_view text);

/// The first line of `text`, made one line and cut to at most `max_bytes` on a code-point boundary;
/// "…" marks a cut or a dropped further line.
std::string title_part(std::string_view text, std::size_t max_bytes = 96);

} // namespace acp::handlers
