// JSON string literals exactly as ECMAScript JSON.stringify writes them, optionally tag-safe.
//
// The model-facing prompt must be byte-identical to the original, so we do not depend on any JSON
// library's escaping choices: `"` and `\` get a backslash, U+0008/0C/0A/0D/09 their short escapes,
// other C0 controls `\u00xx` in lowercase hex, and everything else (DEL, U+2028, `/`, `>`) is raw.
// The tag-safe variant additionally writes every `<` as `\u003c`
// (docs/session-references.md#the-model-facing-prompt), which is the same as
// stringify-then-replaceAll because `<` only occurs inside strings. Inputs are valid UTF-8.
#pragma once

#include "refs/work_counter.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace acp::refs {

/// Byte length of the tag-safe JSON literal of `text`, quotes included.
std::size_t tag_safe_json_size(std::string_view text, WorkCounter* counter = nullptr);

/// Byte length of the plain JSON.stringify literal of `text`, quotes included. Boost.JSON's
/// serializer escapes the same way, so this is also what `text` takes in a frame we write.
std::size_t json_string_size(std::string_view text);

/// The length of the longest prefix of `text` whose plain JSON escaping (quotes not counted) takes
/// at most `budget` bytes. Counts bytes: the caller moves the cut to a code-point boundary.
std::size_t json_escaped_prefix(std::string_view text, std::size_t budget);

/// Appends the tag-safe JSON literal of `text` (quotes included) to `out`.
void append_tag_safe_json(std::string& out, std::string_view text, WorkCounter* counter = nullptr);

/// Appends the plain JSON.stringify literal of `text` (no `<` escaping) to `out`.
void append_json_string(std::string& out, std::string_view text);

/// JSON.stringify(text) as a new string.
std::string json_string(std::string_view text);

} // namespace acp::refs
