// Where requests go: the base URL split into what a socket and an HTTP request line need.
//
// Pure string work, no resolution. Base URLs come with and without a path (`https://api.deepseek.com`,
// `http://127.0.0.1:8080/v1/`); the request target is always that path plus `/chat/completions`.
// The loopback test decides whether plain http is acceptable without --allow-insecure-http.
#pragma once

#include <string>
#include <string_view>

namespace acp::llm {

struct Endpoint {
  bool tls = true;
  std::string host;         ///< without brackets for IPv6 literals; used for resolution, SNI and verification
  std::string port;         ///< always set ("443" / "80" when the URL has none)
  std::string target;       ///< e.g. "/v1/chat/completions"
  std::string host_header;  ///< value of the Host header ("[::1]:8080", "api.deepseek.com")
};

/// Parses an http(s) base URL. Throws ConfigError on anything else (other schemes, user info, queries).
Endpoint parse_base_url(std::string_view base_url);

/// True for localhost, 127.0.0.0/8 and ::1 (also ::ffff:127.x.y.z).
bool is_loopback_host(std::string_view host);

/// ASCII lower-casing (host names, schemes, provider messages: never locale-dependent).
std::string ascii_lower(std::string_view s);

/// True when `host` is an IPv4 or IPv6 literal (verification then matches an IP SAN, and no SNI is sent).
bool is_ip_literal(std::string_view host);

} // namespace acp::llm
