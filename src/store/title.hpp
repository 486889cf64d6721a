// Session titles as the original writes them (docs/store-format.md#titles, the shipped fallbackSessionTitle with
// 5 words / 40 bytes): OSC, CSI and other escape sequences, C0 and C1 controls, zero-width, bidi and
// BOM characters removed; whitespace (JS \s) collapsed; the first five words; at most 40 UTF-8
// bytes, cut on a code-point boundary, no ellipsis.
#pragma once

#include <string>
#include <string_view>

namespace acp::store {

/// The fallback title of a direct message ("" = write no title).
std::string make_fallback_title(std::string_view text);

/// A stored title as listed: cleaned and cut the same way, without the word limit.
std::string listed_title(std::string_view stored);

} // namespace acp::store
