// The per-session model option and its request/header events (handlers/model_option.hpp), and the
// provider set-up's key rules (server/provider_setup.hpp).
#include "handlers/model_option.hpp"
#include "handlers/provider_auth.hpp"
#include "server/provider_setup.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp;
namespace json = boost::json;

namespace {

support::Config deepseek_config() {
  support::Config c;
  c.provider = "deepseek";
  c.model = "deepseek-flash";
  c.base_url = "https://api.deepseek.com";
  c.models = {"deepseek-v4-pro", "deepseek-flash", "deepseek-v4-pro", "deepseek-chat"};
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(model_option)

BOOST_AUTO_TEST_CASE(choices_start_with_the_configured_model_without_duplicates) {
  auto c = deepseek_config();
  auto choices = handlers::model_choices(c, "");
  BOOST_TEST((choices == std::vector<std::string>{"deepseek-flash", "deepseek-v4-pro", "deepseek-chat"}));
  // A model restored from a log stays selectable even when the config no longer lists it.
  choices = handlers::model_choices(c, "deepseek-reasoner");
  BOOST_TEST(choices.back() == "deepseek-reasoner");
  BOOST_TEST(choices.size() == 4u);
}

BOOST_AUTO_TEST_CASE(config_options_shape) {
  auto c = deepseek_config();
  handlers::SessionState s;
  auto options = handlers::model_config_options(c, s);
  BOOST_REQUIRE(options);
  BOOST_REQUIRE_EQUAL(options->size(), 1u);
  const auto& o = options->front();
  BOOST_TEST(o.id == "model");
  BOOST_TEST(o.type == "select");
  BOOST_TEST(*o.category == "model");
  BOOST_TEST(o.currentValue == "deepseek-flash");
  BOOST_TEST(o.options.size() == 3u);
  s.model = "deepseek-chat";
  BOOST_TEST(handlers::model_config_options(c, s)->front().currentValue == "deepseek-chat");
  c.provider = "echo";
  BOOST_TEST(!handlers::model_config_options(c, s));  // echo has no models to choose
}

BOOST_AUTO_TEST_CASE(request_header_initial_then_change_then_nothing) {
  handlers::SessionState s;
  auto e = handlers::request_header_event(s, "deepseek", "deepseek-flash");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->type == "request/header");
  BOOST_TEST(json::serialize(e->data) ==
             R"({"header":{"config":{"provider":"deepseek","model":"deepseek-flash"}},"reason":"initial"})");
  s.logged_provider = "deepseek";
  s.logged_model = "deepseek-flash";
  BOOST_TEST(!handlers::request_header_event(s, "deepseek", "deepseek-flash"));
  e = handlers::request_header_event(s, "deepseek", "deepseek-v4-pro");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->data.at("reason").as_string() == "change");
  BOOST_TEST(!handlers::request_header_event(handlers::SessionState{}, "echo", "echo"));
}

BOOST_AUTO_TEST_CASE(latest_header_is_restored_for_the_same_provider_only) {
  auto c = deepseek_config();
  std::string provider, model;
  for (const char* line :
       {R"({"type":"request/header","seq":4,"data":{"header":{"config":{"provider":"deepseek","model":"deepseek-v4-flash"},"system":"s"},"reason":"initial"}})",
        R"({"type":"user/message","seq":5,"data":{}})",
        R"({"type":"request/header","seq":9,"data":{"header":{"config":{"provider":"deepseek","model":"deepseek-v4-pro"}},"reason":"change"}})",
        R"({"type":"request/header","seq":10,"data":{"header":{"config":{"provider":"deepseek"}}}})"})
    handlers::note_request_header(json::parse(line).as_object(), provider, model);
  BOOST_TEST(provider == "deepseek");
  BOOST_TEST(model == "deepseek-v4-pro");
  handlers::SessionState s;
  handlers::restore_model(c, s, provider, model);
  BOOST_TEST(s.model == "deepseek-v4-pro");
  BOOST_TEST(!handlers::request_header_event(s, "deepseek", "deepseek-v4-pro"));
  handlers::SessionState other;
  handlers::restore_model(c, other, "openai", "gpt-x");
  BOOST_TEST(other.model.empty());  // another provider's model name means nothing here
  BOOST_TEST(handlers::request_header_event(other, "deepseek", "deepseek-flash")->data.at("reason").as_string() == "change");
}

BOOST_AUTO_TEST_SUITE_END()

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
  auto methods = auth.methods();
  BOOST_REQUIRE_EQUAL(methods.size(), 1u);
  BOOST_TEST(methods[0].id == "dsh-acp-api-key");
  BOOST_TEST(methods[0].description->find("DEEPSEEK_API_KEY") != std::string::npos);
  BOOST_TEST(!auth.refresh());
  next = "k1";
  BOOST_TEST(auth.refresh());
  BOOST_TEST(auth.ready());
  BOOST_TEST(installs == 1);
  BOOST_TEST(auth.refresh());  // same key: not rebuilt again
  BOOST_TEST(installs == 1);
  handlers::ProviderAuth echo("echo", false, "", nullptr, nullptr);
  BOOST_TEST(echo.ready());
  BOOST_TEST(echo.methods().empty());
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
