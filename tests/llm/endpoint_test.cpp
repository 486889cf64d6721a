// Base URL parsing, the loopback rule and construction-time configuration errors.
#include "llm/openai/endpoint.hpp"
#include "llm/openai/openai_provider.hpp"
#include "net/endpoint.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::llm;

BOOST_AUTO_TEST_SUITE(endpoint)

BOOST_AUTO_TEST_CASE(base_urls_with_and_without_paths) {
  auto a = parse_base_url("https://api.deepseek.com");
  BOOST_TEST(a.tls);
  BOOST_TEST(a.host == "api.deepseek.com");
  BOOST_TEST(a.port == "443");
  BOOST_TEST(a.target == "/chat/completions");
  BOOST_TEST(a.host_header == "api.deepseek.com");
  auto b = parse_base_url("http://127.0.0.1:8080/v1/");
  BOOST_TEST(!b.tls);
  BOOST_TEST(b.port == "8080");
  BOOST_TEST(b.target == "/v1/chat/completions");
  BOOST_TEST(b.host_header == "127.0.0.1:8080");
  auto c = parse_base_url("HTTP://[::1]:11434/v1");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.host_header == "[::1]:11434");
  BOOST_TEST(parse_base_url("https://api.deepseek.com/").target == "/chat/completions");
}

BOOST_AUTO_TEST_CASE(bad_urls_are_config_errors) {
  for (auto url : {"ftp://x", "api.deepseek.com", "https://", "https://u:p@host", "https://h:0", "https://h:99999",
                   "https://h:8x", "https://h/v1?x=1", "http://[::1", "http://::1:80"})
    BOOST_CHECK_THROW(parse_base_url(url), ConfigError);
}

BOOST_AUTO_TEST_CASE(loopback_hosts) {
  BOOST_TEST(is_loopback_host("localhost"));
  BOOST_TEST(is_loopback_host("LOCALHOST."));
  BOOST_TEST(is_loopback_host("127.0.0.1"));
  BOOST_TEST(is_loopback_host("127.1.2.3"));
  BOOST_TEST(is_loopback_host("::1"));
  BOOST_TEST(is_loopback_host("::ffff:127.0.0.1"));
  BOOST_TEST(!is_loopback_host("128.0.0.1"));
  BOOST_TEST(!is_loopback_host("localhost.example.com"));
  BOOST_TEST(!is_loopback_host("10.0.0.1"));
}

BOOST_AUTO_TEST_CASE(plain_http_to_remote_hosts_needs_the_insecure_flag) {
  boost::asio::io_context ioc;
  OpenAiConfig c;
  c.provider = "openai";
  c.base_url = "http://example.com/v1";
  BOOST_CHECK_THROW(make_openai_provider(c, ioc.get_executor()), ConfigError);
  c.allow_insecure_http = true;
  BOOST_CHECK_NO_THROW(make_openai_provider(c, ioc.get_executor()));
  c.allow_insecure_http = false;
  c.base_url = "http://localhost:1234";
  BOOST_CHECK_NO_THROW(make_openai_provider(c, ioc.get_executor()));
}

BOOST_AUTO_TEST_CASE(other_configuration_errors) {
  boost::asio::io_context ioc;
  OpenAiConfig c;
  c.provider = "openai";
  BOOST_CHECK_THROW(make_openai_provider(c, ioc.get_executor()), ConfigError);  // no base URL
  c.base_url = "https://example.com";
  c.ca_file = "/nonexistent/ca.pem";
  BOOST_CHECK_THROW(make_openai_provider(c, ioc.get_executor()), ConfigError);
  c.ca_file.clear();
  c.api_key = "sk-abc\r\nX-Injected: 1";
  BOOST_CHECK_THROW(make_openai_provider(c, ioc.get_executor()), ConfigError);
  c.api_key.clear();
  c.provider = "anthropic";
  BOOST_CHECK_THROW(make_openai_provider(c, ioc.get_executor()), ConfigError);
}

BOOST_AUTO_TEST_CASE(deepseek_defaults) {
  boost::asio::io_context ioc;
  OpenAiConfig c;  // provider deepseek, nothing else
  auto p = make_openai_provider(c, ioc.get_executor());
  BOOST_TEST(p->name() == "deepseek");
}

BOOST_AUTO_TEST_SUITE_END()

// The URLs of MCP servers over HTTP (net/endpoint.hpp, Boost.URL): absolute ones, and the references
// a legacy server's endpoint event gives.
BOOST_AUTO_TEST_SUITE(http_urls)

BOOST_AUTO_TEST_CASE(absolute_urls_become_endpoints) {
  auto a = acp::net::parse_http_url("http://127.0.0.1:3000/mcp");
  BOOST_TEST(!a.tls);
  BOOST_TEST(a.host == "127.0.0.1");
  BOOST_TEST(a.port == "3000");
  BOOST_TEST(a.target == "/mcp");
  BOOST_TEST(a.host_header == "127.0.0.1:3000");
  auto b = acp::net::parse_http_url("HTTPS://Example.com/a/b?x=1&y=%20#frag");
  BOOST_TEST(b.tls);
  BOOST_TEST(b.port == "443");
  BOOST_TEST(b.target == "/a/b?x=1&y=%20");  // the fragment is never sent
  BOOST_TEST(b.host_header == "Example.com");
  auto c = acp::net::parse_http_url("http://[::1]:8080");
  BOOST_TEST(c.host == "::1");
  BOOST_TEST(c.host_header == "[::1]:8080");
  BOOST_TEST(c.target == "/");
}

BOOST_AUTO_TEST_CASE(unusable_urls_are_refused) {
  for (auto url : {"ftp://x/y", "example.com/mcp", "/mcp", "http://", "http://u:p@host/mcp", "http://host:0/",
                   "http://host:99999/", "http://host:8x/", "http://a b/"})
    BOOST_CHECK_THROW(acp::net::parse_http_url(url), acp::net::BadUrl);
}

BOOST_AUTO_TEST_CASE(references_resolve_against_the_stream_url) {
  using acp::net::resolve_url;
  BOOST_TEST(resolve_url("http://127.0.0.1:9/sse", "/messages?sessionId=a1") == "http://127.0.0.1:9/messages?sessionId=a1");
  BOOST_TEST(resolve_url("http://127.0.0.1:9/v1/sse", "messages?s=1") == "http://127.0.0.1:9/v1/messages?s=1");
  BOOST_TEST(resolve_url("http://127.0.0.1:9/sse", "http://other:1/m") == "http://other:1/m");
  auto here = acp::net::parse_http_url("http://127.0.0.1:9/sse");
  BOOST_TEST(acp::net::same_origin(here, acp::net::parse_http_url("http://127.0.0.1:9/messages")));
  BOOST_TEST(!acp::net::same_origin(here, acp::net::parse_http_url("http://127.0.0.1:10/messages")));
  BOOST_TEST(!acp::net::same_origin(here, acp::net::parse_http_url("https://127.0.0.1:9/messages")));
  BOOST_TEST(!acp::net::same_origin(here, acp::net::parse_http_url("http://evil.example:9/messages")));
  BOOST_CHECK_THROW(resolve_url("http://127.0.0.1:9/sse", "http://a b/"), acp::net::BadUrl);
}

BOOST_AUTO_TEST_SUITE_END()
