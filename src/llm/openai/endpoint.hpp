// Where requests go: the base URL split into what a socket and an HTTP request line need.
//
// Pure string work (net::parse_http_url, Boost.URL), no resolution. Base URLs come with and without a path (`https://api.deepseek.com`,
// `http://127.0.0.1:8080/v1/`); the request target is always that path plus `/chat/completions`.
// The loopback test decides whether plain http is acceptable without --allow-insecure-http.
#pragma once

#include "net/endpoint.hpp"

#include <string>
#include <string_view>

namespace acp::llm {

using net::Endpoint;
using net::is_ip_literal;

/// Parses an http(s) base URL. Throws ConfigError on anything else (other schemes, user info, queries).
Endpoint parse_base_url(std::string_view base_url);

/// True for localhost, 127.0.0.0/8 and ::1 (also ::ffff:127.x.y.z).
bool is_loopback_host(std::string_view host);

} // namespace acp::llm
