// Where an HTTP request goes: a URL split into what a socket and a request line need. Absolute URLs
// and the references a server hands out (a legacy MCP server's `endpoint` event) are read with
// Boost.URL; the model provider's base URL keeps its own rules (llm/openai/endpoint.hpp).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace acp::net {

struct Endpoint {
  bool tls = true;
  std::string host;         ///< without brackets for IPv6 literals; used for resolution, SNI and verification
  std::string port;         ///< always set ("443" / "80" when the URL has none)
  std::string target;       ///< path and query, e.g. "/mcp" or "/messages?sessionId=1"
  std::string host_header;  ///< value of the Host header ("[::1]:8080", "api.deepseek.com")
};

/// A URL that cannot be used; the message names it and says why, reason() says only why.
class BadUrl : public std::invalid_argument {
public:
  BadUrl(const std::string& what, std::string reason) : std::invalid_argument(what), reason_(std::move(reason)) {}
  const std::string& reason() const noexcept { return reason_; }

private:
  std::string reason_;
};

/// Parses an absolute http or https URL. A fragment is dropped (it is never sent). Throws BadUrl on
/// anything else, and on user info (credentials go in headers, not in a URL that gets logged).
Endpoint parse_http_url(std::string_view url);

/// `reference` resolved against the absolute URL `base` (RFC 3986 §5). Throws BadUrl.
std::string resolve_url(std::string_view base, std::string_view reference);

/// Whether two endpoints are the same origin (scheme, host and port).
bool same_origin(const Endpoint& a, const Endpoint& b);

/// True when `host` is an IPv4 or IPv6 literal (verification then matches an IP SAN, and no SNI is sent).
bool is_ip_literal(std::string_view host);

} // namespace acp::net
