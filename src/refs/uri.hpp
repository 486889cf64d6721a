// The `dsh-session:` URI of a session id (docs/session-references.md#uris).
//
// A URI is the scheme followed by unpadded base64url of the UTF-8 of JSON.stringify(id). Decoding is
// strict: the payload must be exactly what encode_uri() would produce for the string it parses to,
// which is the original's "re-encode and compare" canonical check. Our strings are UTF-8, so an id
// holding an unpaired surrogate cannot exist: a payload whose JSON escapes one is rejected as an
// invalid reference (a documented deviation from the original, which accepts it).
#pragma once

#include <string>
#include <string_view>

namespace acp::refs {

inline constexpr std::string_view kSessionReferenceScheme = "dsh-session:";

/// "dsh-session:" + base64url(UTF-8(JSON.stringify(id))), no padding.
std::string encode_uri(std::string_view session_id);

/// The session id of a canonical URI. Throws SessionReferenceError(invalid_reference) with
/// `invalid session reference URI <JSON(uri)>` for anything else.
std::string decode_uri(std::string_view uri);

/// Unpadded base64url (RFC 4648 §5); exposed for tests.
std::string base64url_encode(std::string_view bytes);

} // namespace acp::refs
