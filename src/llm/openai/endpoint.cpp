#include "llm/openai/endpoint.hpp"

#include "llm/openai/openai_config.hpp"

#include <boost/asio/ip/address.hpp>

#include "support/ascii.hpp"

namespace acp::llm {

bool is_loopback_host(std::string_view host) {
  std::string h = support::ascii_lower(host);
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
  auto fail = [&](const std::string& why) {
    return ConfigError("invalid base URL '" + std::string(url) + "': " + why);
  };
  // A query or fragment would end up before /chat/completions, or be dropped without a word.
  if (url.find_first_of("?#") != std::string_view::npos) throw fail("queries and fragments are not supported");
  Endpoint ep;
  try {
    ep = net::parse_http_url(url);
  } catch (const net::BadUrl& e) {
    throw fail(e.reason());
  }
  std::string path = std::move(ep.target);
  while (!path.empty() && path.back() == '/') path.pop_back();
  ep.target = path + "/chat/completions";
  return ep;
}

} // namespace acp::llm
