// Mentions in message text (docs/session-references.md#mentions).
//
// format_mention() writes `@[label](dsh-session:…)`. parse_text() reproduces the original's global
// regex `@\[((?:\\.|[^\\\]])*)\]\((dsh-session:[^\s)]*)\)|(dsh-session:[A-Za-z0-9_-]+)` by hand,
// scanning left to right, Markdown form first: matches become `@label` and yield references in
// appearance order (no dedupe). `\s` is JavaScript's exact set, not the C locale's. Explicit
// mentions with malformed URIs and non-canonical bare URIs throw invalid_reference.
//
// Both forms take an anchor `#seq=N` after the canonical URI (uri.hpp). In a Markdown mention any
// other fragment makes the URI malformed, as before; bare text takes `#seq=` and a run of digits,
// and leaves any other `#…` as text.
#pragma once

#include "refs/types.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace acp::refs {

struct ParsedText {
  std::string text;                          ///< the text with mentions replaced by `@label`
  std::vector<NormalizedReference> references;  ///< label = the mention's label, or the id for bare URIs
};

/// `@[` + escape(label or id) + `](` + encode_uri(id) + `)`; escape prefixes `\` and `]` with `\`.
/// An anchored reference gets its `#seq=N` after the URI.
std::string format_mention(const SessionReference& reference);

ParsedText parse_text(std::string_view text);

} // namespace acp::refs
