#include "llm/openai/endpoint.hpp"

#include "llm/openai/openai_config.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>

namespace acp::llm {


bool is_loopback_host(std::string_view host) {
  std::string h = ascii_lower(host);
  if (!h.empty() && h.back() == '.')
    h.pop_back();  // "localhost." is the same name
  if (h == "localhost")
    return true;
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(h, ec);
  if (ec)
    return false;
  if (addr.is_v6() && addr.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6()).is_loopback();  // the v4-mapped form of 127/8 (is_loopback() misses it)
  return addr.is_loopback();
}

Endpoint parse_base_url(std::string_view url) {
  Endpoint ep;
  auto fail = [&](const char* why) -> ConfigError {
    return ConfigError("invalid base URL '" + std::string(url) + "': " + why);
  };
  std::string_view rest;
  std::string scheme_end = ascii_lower(url.substr(0, std::min<std::size_t>(url.size(), 8)));
  if (scheme_end.rfind("https://", 0) == 0) {
    ep.tls = true;
    rest = url.substr(8);
  } else if (scheme_end.rfind("http://", 0) == 0) {
    ep.tls = false;
    rest = url.substr(7);
  } else {
    throw fail("expected http:// or https://");
  }
  if (rest.find_first_of("?#") != std::string_view::npos)
    throw fail("queries and fragments are not supported");
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos)
    throw fail("user info is not supported (use the API key setting)");
  if (authority.empty())
    throw fail("missing host");

  std::string_view port;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      throw fail("unterminated IPv6 literal");
    ep.host = std::string(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        throw fail("garbage after IPv6 literal");
      port = after.substr(1);
    }
    if (!is_ip_literal(ep.host))
      throw fail("bad IPv6 literal");
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      ep.host = std::string(authority.substr(0, colon));
      port = authority.substr(colon + 1);
    } else {
      ep.host = std::string(authority);
    }
    if (ep.host.find(':') != std::string::npos)
      throw fail("IPv6 literals must be in brackets");
  }
  if (ep.host.empty())
    throw fail("missing host");
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(port)) == 0 || std::stoi(std::string(port)) > 65535)
      throw fail("bad port");
    ep.port = std::string(port);
  } else {
    ep.port = ep.tls ? "443" : "80";
  }

  bool v6 = ep.host.find(':') != std::string::npos;
  ep.host_header = v6 ? "[" + ep.host + "]" : ep.host;
  bool default_port = (ep.tls && ep.port == "443") || (!ep.tls && ep.port == "80");
  if (!default_port)
    ep.host_header += ":" + ep.port;

  std::string p(path);
  while (!p.empty() && p.back() == '/')
    p.pop_back();
  ep.target = p + "/chat/completions";
  return ep;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

} // namespace acp::llm
