#include "refs/uri.hpp"

#include "refs/errors.hpp"
#include "refs/json_string.hpp"

#include "support/json_text.hpp"

#include <array>
#include <optional>

namespace acp::refs {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// Decodes base64url without padding. Any payload that is not the exact encoding of its bytes (a
// dangling single character, non-zero trailing bits) is refused: it could never be canonical.
std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = sextet(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

[[noreturn]] void invalid(std::string_view uri) {
  throw SessionReferenceError(ErrorCode::invalid_reference, "invalid session reference URI " + json_string(uri));
}

} // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                      static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
  } else if (rest == 2) {
    std::uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
  }
  return out;
}

std::string encode_uri(std::string_view session_id) {
  return std::string(kSessionReferenceScheme) + base64url_encode(json_string(session_id));
}

std::string decode_uri(std::string_view uri) {
  if (uri.substr(0, kSessionReferenceScheme.size()) != kSessionReferenceScheme) invalid(uri);
  std::string_view payload = uri.substr(kSessionReferenceScheme.size());
  if (payload.empty()) invalid(uri);
  auto bytes = base64url_decode(payload);
  if (!bytes) invalid(uri);
  boost::system::error_code ec;
  bool replaced = false;
  // parse_json rejects invalid UTF-8 (which JavaScript would decode lossily and then fail the
  // canonical check anyway) and tells us when an escaped unpaired surrogate had to be replaced.
  boost::json::value parsed = support::parse_json(*bytes, ec, &replaced);
  if (ec || replaced || !parsed.is_string()) invalid(uri);
  std::string id(parsed.get_string());
  if (encode_uri(id) != uri) invalid(uri);
  return id;
}

std::optional<std::int64_t> parse_anchor_seq(std::string_view digits) {
  if (digits.empty() || digits.size() > 16) return std::nullopt;  // 2^53-1 has 16 digits
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  std::int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > kMaxAnchorSeq) return std::nullopt;
  return v;
}

std::string encode_reference_uri(std::string_view session_id, std::optional<std::int64_t> anchor_seq) {
  std::string uri = encode_uri(session_id);
  if (anchor_seq) {
    uri += kAnchorPrefix;
    uri += std::to_string(*anchor_seq);
  }
  return uri;
}

ReferenceUri decode_reference_uri(std::string_view uri) {
  const std::size_t hash = uri.find('#');
  if (hash == std::string_view::npos) return ReferenceUri{decode_uri(uri), std::nullopt};
  // The error names what the user wrote, fragment included, not just the part that failed.
  if (uri.substr(hash, kAnchorPrefix.size()) != kAnchorPrefix) invalid(uri);
  std::optional<std::int64_t> seq = parse_anchor_seq(uri.substr(hash + kAnchorPrefix.size()));
  if (!seq) invalid(uri);
  std::string id;
  try {
    id = decode_uri(uri.substr(0, hash));
  } catch (const SessionReferenceError&) {
    invalid(uri);
  }
  return ReferenceUri{std::move(id), seq};
}

} // namespace acp::refs
