#include "support/config.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace acp::support;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dsh-config-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

Config load(const std::vector<std::string>& args, Environment env) { return load_config(args, env).config; }
} // namespace

BOOST_AUTO_TEST_SUITE(configuration)

BOOST_AUTO_TEST_CASE(defaults_follow_the_xdg_directories) {
  TempDir t;
  Config c = load({}, {{"HOME", t.path}});
  BOOST_TEST(c.store == t.path + "/.local/share/dsh-acp/sessions");
  BOOST_TEST(c.log_file == t.path + "/.local/state/dsh-acp/dsh-acp.log");
  BOOST_TEST(c.max_frame_bytes == 67108864);
  BOOST_TEST(c.max_references == 3);
  BOOST_TEST(c.provider == "deepseek");
  BOOST_TEST(c.model == "deepseek-flash");
  c = load({}, {{"HOME", t.path}, {"XDG_DATA_HOME", "/data"}, {"XDG_STATE_HOME", "/state"}});
  BOOST_TEST(c.store == "/data/dsh-acp/sessions");
  BOOST_TEST(c.log_file == "/state/dsh-acp/dsh-acp.log");
}

BOOST_AUTO_TEST_CASE(dsh_acp_home_holds_everything) {
  TempDir t;
  Config c = load({}, {{"DSH_ACP_HOME", t.path}});
  BOOST_TEST(c.store == t.path + "/sessions");
  BOOST_TEST(c.log_file == t.path + "/dsh-acp.log");
}

BOOST_AUTO_TEST_CASE(flag_beats_environment_beats_file_beats_default) {
  TempDir t;
  t.write("config.json", R"({"echoDelayMs": 3, "maxReferences": 2, "candidateLimit": 7})");
  Environment env{{"DSH_ACP_HOME", t.path}, {"DSH_ACP_MAX_REFERENCES", "1"}, {"DSH_ACP_ECHO_DELAY_MS", "5"}};
  Config c = load({"--echo-delay-ms", "9"}, env);
  BOOST_TEST(c.echo_delay_ms == 9);      // flag
  BOOST_TEST(c.max_references == 1);     // environment
  BOOST_TEST(c.candidate_limit == 7);    // file
  BOOST_TEST(c.max_reference_bytes == 65536);  // default
  BOOST_TEST(c.config_file == t.path + "/config.json");
}

BOOST_AUTO_TEST_CASE(flag_values_may_use_equals) {
  Config c = load({"--max-frame-bytes=2048", "--provider=echo"}, {{"HOME", "/tmp"}});
  BOOST_TEST(c.max_frame_bytes == 2048);
}

BOOST_AUTO_TEST_CASE(bad_configuration_is_a_config_error) {
  TempDir t;
  std::vector<std::vector<std::string>> bad_args = {
      {"--max-references", "4"}, {"--max-references", "0"}, {"--echo-delay-ms", "x"}, {"--provider", "gpt"},
      {"--frobnicate"},          {"--store"},                {"positional"},          {"--config", t.path + "/missing.json"},
      {"--log-level", "loud"},   {"--max-frame-bytes", "12abc"}};
  for (const auto& args : bad_args) {
    BOOST_TEST_CONTEXT(args[0]) { BOOST_CHECK_THROW(load(args, {{"HOME", t.path}}), ConfigError); }
  }
  BOOST_CHECK_THROW(load({}, {{"HOME", t.path}, {"DSH_ACP_MAX_REFERENCES", "9"}}), ConfigError);
  const char* bad_files[] = {R"({"maxReferences": 5})", R"({"unknownKey": 1})", R"({"echoDelayMs": "3"})", "[1]", "{",
                             R"({"models": [1]})"};
  for (const char* text : bad_files) {
    BOOST_TEST_CONTEXT(text) {
      std::string path = t.write("c.json", text);
      BOOST_CHECK_THROW(load({"--config", path}, {{"HOME", t.path}}), ConfigError);
    }
  }
}

BOOST_AUTO_TEST_CASE(help_and_version_are_actions) {
  BOOST_TEST((load_config({"--store", "/x", "--help"}, {}).action == CliAction::help));
  BOOST_TEST((load_config({"--version"}, {}).action == CliAction::version));
  BOOST_TEST(usage_text().find("--max-frame-bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(provider_defaults) {
  Config c = load({"--provider", "deepseek"}, {{"HOME", "/tmp"}, {"DEEPSEEK_API_KEY", "k"}});
  BOOST_TEST(c.model == "deepseek-flash");
  BOOST_TEST(c.base_url == "https://api.deepseek.com");
  BOOST_TEST(c.deepseek_api_key == "k");
  c = load({"--provider", "deepseek"}, {{"HOME", "/tmp"}, {"DSH_ACP_MODEL", "deepseek-v4-pro"}});
  BOOST_TEST(c.model == "deepseek-v4-pro");
  BOOST_CHECK_THROW(load({"--provider", "openai"}, {{"HOME", "/tmp"}}), ConfigError);
}

BOOST_AUTO_TEST_CASE(api_keys_from_environment_or_config_file) {
  TempDir t;
  t.write("config.json", R"({"deepseekApiKey": "file-ds", "openaiApiKey": "file-oa"})");
  Config c = load({"--config", t.path + "/config.json"}, {{"HOME", t.path}});
  BOOST_TEST(c.deepseek_api_key == "file-ds");
  BOOST_TEST(c.openai_api_key == "file-oa");
  c = load({"--config", t.path + "/config.json"}, {{"HOME", t.path}, {"DEEPSEEK_API_KEY", "env-ds"}});
  BOOST_TEST(c.deepseek_api_key == "env-ds");  // environment over file
  BOOST_TEST(c.openai_api_key == "file-oa");
  t.write("config.json", R"({"deepseekApiKey": 5})");
  BOOST_CHECK_THROW(load({"--config", t.path + "/config.json"}, {{"HOME", t.path}}), ConfigError);
  // No flag for keys: they would be visible to every user in `ps`.
  BOOST_CHECK_THROW(load({"--deepseek-api-key", "k"}, {{"HOME", t.path}}), ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
