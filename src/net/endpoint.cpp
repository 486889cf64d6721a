#include "net/endpoint.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <algorithm>

namespace acp::net {

namespace urls = boost::urls;

bool is_ip_literal(std::string_view host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(host), ec);
  return !ec;
}

Endpoint parse_http_url(std::string_view text) {
  auto fail = [&](const std::string& why) { return BadUrl("invalid URL '" + std::string(text) + "': " + why, why); };
  auto parsed = urls::parse_uri(text);
  if (!parsed) throw fail(parsed.error().message());
  const urls::url_view& u = *parsed;
  Endpoint ep;
  if (u.scheme_id() == urls::scheme::https) ep.tls = true;
  else if (u.scheme_id() == urls::scheme::http) ep.tls = false;
  else throw fail("expected http:// or https://");
  if (u.has_userinfo()) throw fail("user info is not supported (send credentials as headers)");
  ep.host = u.host_address();
  if (ep.host.empty()) throw fail("missing host");
  if (u.has_port()) {
    // Checked here: Boost.URL 1.81 keeps 5-digit ports past 65535 (port_number() wraps).
    std::string_view port = u.port();
    bool digits = !port.empty() && port.size() <= 5 &&
                  std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoul(std::string(port)) == 0 || std::stoul(std::string(port)) > 65535) throw fail("bad port");
    ep.port = port;
  } else {
    ep.port = ep.tls ? "443" : "80";
  }
  ep.host_header = u.encoded_host();
  if (ep.port != (ep.tls ? "443" : "80")) ep.host_header += ":" + ep.port;
  // Boost.URL 1.81 reads "http://h:8x/" as port 8 and path "x/": after an authority, a path starts with '/'.
  if (!u.encoded_path().empty() && u.encoded_path().front() != '/') throw fail("bad port or path");
  ep.target = u.encoded_path().empty() ? std::string("/") : std::string(u.encoded_path());
  if (u.has_query()) ep.target += "?" + std::string(u.encoded_query());
  return ep;
}

std::string resolve_url(std::string_view base, std::string_view reference) {
  auto b = urls::parse_uri(base);
  if (!b) throw BadUrl("invalid URL '" + std::string(base) + "': " + b.error().message(), b.error().message());
  auto r = urls::parse_uri_reference(reference);
  if (!r) throw BadUrl("invalid URL reference '" + std::string(reference) + "': " + r.error().message(), r.error().message());
  urls::url out;
  if (auto done = urls::resolve(*b, *r, out); !done)
    throw BadUrl("cannot resolve '" + std::string(reference) + "': " + done.error().message(), done.error().message());
  return std::string(out.buffer());
}

bool same_origin(const Endpoint& a, const Endpoint& b) {
  return a.tls == b.tls && a.port == b.port && a.host_header == b.host_header;
}

} // namespace acp::net
