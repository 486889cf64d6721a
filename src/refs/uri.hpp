// The `dsh-session:` URI of a session id (docs/session-references.md#uris).
//
// A URI is the scheme followed by unpadded base64url of the UTF-8 of JSON.stringify(id). Decoding is
// strict: the payload must be exactly what encode_uri() would produce for the string it parses to,
// which is the original's "re-encode and compare" canonical check. Our strings are UTF-8, so an id
// holding an unpaired surrogate cannot exist: a payload whose JSON escapes one is rejected as an
// invalid reference (a documented deviation from the original, which accepts it).
//
// A reference may name a place in the session: the canonical URI followed by the anchor `#seq=N`,
// N a decimal seq without leading zeros and at most 2^53-1 (docs/session-references.md#anchors).
// decode_uri() keeps refusing every fragment (it is the contract's decoder, golden vectors
// included); decode_reference_uri() is the one place the anchor is accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::refs {

inline constexpr std::string_view kSessionReferenceScheme = "dsh-session:";

/// "dsh-session:" + base64url(UTF-8(JSON.stringify(id))), no padding.
std::string encode_uri(std::string_view session_id);

/// The session id of a canonical URI. Throws SessionReferenceError(invalid_reference) with
/// `invalid session reference URI <JSON(uri)>` for anything else.
std::string decode_uri(std::string_view uri);

inline constexpr std::string_view kAnchorPrefix = "#seq=";
inline constexpr std::int64_t kMaxAnchorSeq = 9007199254740991;  // 2^53-1: a seq JSON carries exactly

/// A reference URI as a mention or a link may write it.
struct ReferenceUri {
  std::string session_id;
  std::optional<std::int64_t> anchor_seq;
};

/// encode_uri(id), then `#seq=N` when there is an anchor.
std::string encode_reference_uri(std::string_view session_id, std::optional<std::int64_t> anchor_seq);

/// A canonical URI optionally followed by `#seq=N`. Any other fragment, and a malformed N (empty,
/// leading zero, sign, beyond 2^53-1), throws as decode_uri() does, naming the whole input.
ReferenceUri decode_reference_uri(std::string_view uri);

/// N of an anchor: ASCII digits, no leading zero (but "0"), at most kMaxAnchorSeq; nullopt otherwise.
std::optional<std::int64_t> parse_anchor_seq(std::string_view digits);

/// Unpadded base64url (RFC 4648 §5); exposed for tests.
std::string base64url_encode(std::string_view bytes);

} // namespace acp::refs
