// The provider set-up's key rules (server/provider_setup.hpp) and the auth methods, authenticate and
// logout over them; the model choice is tested with the engine.
#include "../common/temp_dir.hpp"
#include "handlers/provider_auth.hpp"
#include "server/provider_setup.hpp"
#include "support/key_file.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include <unistd.h>

using namespace acp;
namespace json = boost::json;

BOOST_AUTO_TEST_SUITE(provider_setup)

BOOST_AUTO_TEST_CASE(which_providers_need_a_key) {
  support::Config c;
  c.provider = "deepseek";
  c.base_url = "http://127.0.0.1:9";
  BOOST_TEST(server::provider_needs_key(c));  // deepseek always
  c.provider = "openai";
  BOOST_TEST(!server::provider_needs_key(c));
  c.base_url = "http://localhost:8080/v1";
  BOOST_TEST(!server::provider_needs_key(c));
  c.base_url = "https://api.openai.com/v1";
  BOOST_TEST(server::provider_needs_key(c));
  c.provider = "echo";
  BOOST_TEST(!server::provider_needs_key(c));
}

BOOST_AUTO_TEST_CASE(auth_methods_and_refresh) {
  int installs = 0;
  std::string next;
  handlers::ProviderAuth auth("deepseek", true, "", [&] { return next; }, [&](const std::string&) { ++installs; });
  BOOST_TEST(!auth.ready());
  auto methods = auth.methods(true);
  BOOST_REQUIRE_EQUAL(methods.size(), 1u);  // no set-up offered: no terminal method
  BOOST_TEST(methods[0].id == "dsh-acp-api-key");
  BOOST_TEST(methods[0].type.value_or("") == "agent");
  BOOST_TEST(methods[0].description->find("DEEPSEEK_API_KEY") != std::string::npos);
  // The terminal method only to a client that runs one (the schema's rule), the agent one always.
  auth.offer_setup("/cfg/deepseek-api-key");
  BOOST_REQUIRE_EQUAL(auth.methods(false).size(), 1u);
  methods = auth.methods(true);
  BOOST_REQUIRE_EQUAL(methods.size(), 2u);
  BOOST_TEST(methods[1].id == "dsh-acp-setup");
  BOOST_TEST(methods[1].type.value_or("") == "terminal");
  BOOST_TEST((methods[1].args.value_or(std::vector<std::string>{}) == std::vector<std::string>{"--setup"}));
  BOOST_TEST(methods[1].description->find("/cfg/deepseek-api-key") != std::string::npos);
  BOOST_TEST(!auth.refresh());
  next = "k1";
  BOOST_TEST(auth.refresh());
  BOOST_TEST(auth.ready());
  BOOST_TEST(installs == 1);
  BOOST_TEST(auth.refresh());  // same key: not rebuilt again
  BOOST_TEST(installs == 1);
  handlers::ProviderAuth echo("echo", false, "", nullptr, nullptr);
  BOOST_TEST(echo.ready());
  // A provider without keys still names one agent method (the ACP registry lists only agents with one).
  BOOST_REQUIRE_EQUAL(echo.methods(true).size(), 1u);
  BOOST_TEST(echo.methods(true)[0].type.value_or("") == "agent");
}

// logout (issue 28): the key in use is forgotten (the provider gets none), the key file --setup
// wrote is removed, and authenticate finds a key again where one is left.
BOOST_AUTO_TEST_CASE(logout_forgets_the_key_and_removes_the_stored_one) {
  acp::test::TempDir dir("dsh-logout");
  const std::string file = dir / "deepseek-api-key";
  support::write_key_file(file, "sk-stored");
  std::vector<std::string> installed;
  std::string next;
  handlers::ProviderAuth auth("deepseek", true, "sk-stored", [&] { return next; },
                              [&](const std::string& key) { installed.push_back(key); });
  auth.offer_setup(file);
  BOOST_TEST(auth.ready());
  auth.logout();
  BOOST_TEST(!auth.ready());
  BOOST_TEST((installed == std::vector<std::string>{""}));
  BOOST_TEST(!std::filesystem::exists(file));
  BOOST_TEST(!auth.refresh());
  auth.logout();  // nothing left to forget: still fine
  BOOST_TEST(installed.size() == 1u);
  next = "sk-env";
  BOOST_TEST(auth.refresh());
  BOOST_TEST(installed.back() == "sk-env");
  // A provider without keys stays usable.
  handlers::ProviderAuth echo("echo", false, "", nullptr, nullptr);
  echo.logout();
  BOOST_TEST(echo.ready());
}

BOOST_AUTO_TEST_CASE(bad_base_url_is_a_configuration_error) {
  boost::asio::io_context io;
  support::Config c;
  c.provider = "openai";
  c.model = "m";
  c.base_url = "ftp://example.com";
  BOOST_CHECK_THROW(server::make_provider(c, {}, io.get_executor()), std::exception);
  c.base_url = "http://example.com";  // plain http to a remote host without --allow-insecure-http
  BOOST_CHECK_THROW(server::make_provider(c, {}, io.get_executor()), std::exception);
  c.base_url = "http://127.0.0.1:1";
  auto setup = server::make_provider(c, {}, io.get_executor());
  BOOST_TEST(setup.provider->name() == "openai");
  BOOST_TEST(setup.auth->ready());
}

BOOST_AUTO_TEST_SUITE_END()
