// Which code points a reader never sees as text: the one home of these classes, so a mention, a
// title, a prompt and a file name agree on what is space and what is invisible.
#pragma once

namespace acp::support {

/// JavaScript's `\s` (and String.prototype.trim's whitespace): the harness's own idea of space, which
/// titles, mentions and blank prompts must match.
bool is_js_whitespace(char32_t cp);

/// Controls other than the whitespace ones (C0, DEL, C1), zero-width and joiner characters, the
/// bidirectional marks, embeddings, overrides and isolates, and the BOM: characters that show nothing
/// themselves but can hide or reorder what is around them (a name that reads as another).
bool is_invisible(char32_t cp);

} // namespace acp::support
