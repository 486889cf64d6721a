#include "../common/temp_dir.hpp"
#include "server/server_config.hpp"
#include "support/config.hpp"
#include "support/key_file.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

using namespace acp::support;

namespace {
using acp::test::TempDir;

Config load(const std::vector<std::string>& args, Environment env) { return load_config(args, env).config; }
// The server's loader: support's, plus the store URL check that needs acp_store_pg.
Config server_load(const std::vector<std::string>& args, Environment env) {
  return acp::server::load_config(args, env).config;
}
} // namespace

BOOST_AUTO_TEST_SUITE(configuration)

BOOST_AUTO_TEST_CASE(defaults_follow_the_xdg_directories) {
  TempDir t;
  Config c = load({}, {{"HOME", t.path()}});
  BOOST_TEST(c.store == t.path() + "/.local/share/dsh-acp/sessions");
  BOOST_TEST(c.log_file == t.path() + "/.local/state/dsh-acp/dsh-acp.log");
  BOOST_TEST(c.max_frame_bytes == 67108864);
  BOOST_TEST(c.max_references == 3);
  BOOST_TEST(c.provider == "deepseek");
  BOOST_TEST(c.model == "deepseek-flash");
  c = load({}, {{"HOME", t.path()}, {"XDG_DATA_HOME", "/data"}, {"XDG_STATE_HOME", "/state"}});
  BOOST_TEST(c.store == "/data/dsh-acp/sessions");
  BOOST_TEST(c.log_file == "/state/dsh-acp/dsh-acp.log");
}

BOOST_AUTO_TEST_CASE(dsh_acp_home_holds_everything) {
  TempDir t;
  Config c = load({}, {{"DSH_ACP_HOME", t.path()}});
  BOOST_TEST(c.store == t.path() + "/sessions");
  BOOST_TEST(c.log_file == t.path() + "/dsh-acp.log");
}

// Image attachments of harness sessions live in the harness's home, found as the harness finds it.
BOOST_AUTO_TEST_CASE(harness_home_is_dsh_home_unless_blank_else_dot_dsh) {
  BOOST_TEST(load({}, {{"HOME", "/home/u"}}).harness_home == "/home/u/.dsh");
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_HOME", " \t "}}).harness_home == "/home/u/.dsh");
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_HOME", "/opt/dsh/"}}).harness_home == "/opt/dsh");
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_HOME", "~/h/../dsh"}}).harness_home == "/home/u/dsh");
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_HOME", "~"}}).harness_home == "/home/u");
  char cwd[4096];
  BOOST_TEST_REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_HOME", "rel"}}).harness_home == (std::string(cwd) == "/" ? "/rel" : std::string(cwd) + "/rel"));
}

BOOST_AUTO_TEST_CASE(flag_beats_environment_beats_file_beats_default) {
  TempDir t;
  t.write("config.json", R"({"echoDelayMs": 3, "maxReferences": 2, "candidateLimit": 7})");
  Environment env{{"DSH_ACP_HOME", t.path()}, {"DSH_ACP_MAX_REFERENCES", "1"}, {"DSH_ACP_ECHO_DELAY_MS", "5"}};
  Config c = load({"--echo-delay-ms", "9"}, env);
  BOOST_TEST(c.echo_delay_ms == 9);      // flag
  BOOST_TEST(c.max_references == 1);     // environment
  BOOST_TEST(c.candidate_limit == 7);    // file
  BOOST_TEST(c.max_reference_bytes == 65536);  // default
  BOOST_TEST(c.config_file == t.path() + "/config.json");
}

BOOST_AUTO_TEST_CASE(flag_values_may_use_equals) {
  Config c = load({"--max-frame-bytes=2048", "--provider=echo"}, {{"HOME", "/tmp"}});
  BOOST_TEST(c.max_frame_bytes == 2048);
}

// The file: --config, else $DSH_ACP_CONFIG, else the home's config.json; a file named either way must exist.
BOOST_AUTO_TEST_CASE(dsh_acp_config_names_the_file_unless_the_flag_does) {
  TempDir t;
  t.write("config.json", R"({"candidateLimit": 7})");
  const std::string named = t.write("named.json", R"({"candidateLimit": 8})");
  const std::string flagged = t.write("flagged.json", R"({"candidateLimit": 9})");
  BOOST_TEST(load({}, {{"DSH_ACP_HOME", t.path()}}).candidate_limit == 7);
  BOOST_TEST(load({}, {{"DSH_ACP_HOME", t.path()}, {"DSH_ACP_CONFIG", named}}).candidate_limit == 8);
  BOOST_TEST(load({"--config", flagged}, {{"DSH_ACP_HOME", t.path()}, {"DSH_ACP_CONFIG", named}}).candidate_limit == 9);
  BOOST_CHECK_THROW(load({}, {{"DSH_ACP_HOME", t.path()}, {"DSH_ACP_CONFIG", t.path() + "/missing.json"}}), ConfigError);
}

BOOST_AUTO_TEST_CASE(bad_configuration_is_a_config_error) {
  TempDir t;
  std::vector<std::vector<std::string>> bad_args = {
      {"--max-references", "4"}, {"--max-references", "0"}, {"--echo-delay-ms", "x"}, {"--provider", "gpt"},
      {"--frobnicate"},          {"--store"},                {"positional"},          {"--config", t.path() + "/missing.json"},
      {"--log-level", "loud"},   {"--max-frame-bytes", "12abc"}};
  for (const auto& args : bad_args) {
    BOOST_TEST_CONTEXT(args[0]) { BOOST_CHECK_THROW(load(args, {{"HOME", t.path()}}), ConfigError); }
  }
  BOOST_CHECK_THROW(load({}, {{"HOME", t.path()}, {"DSH_ACP_MAX_REFERENCES", "9"}}), ConfigError);
  const char* bad_files[] = {R"({"maxReferences": 5})", R"({"unknownKey": 1})", R"({"echoDelayMs": "3"})", "[1]", "{",
                             R"({"models": [1]})"};
  for (const char* text : bad_files) {
    BOOST_TEST_CONTEXT(text) {
      std::string path = t.write("c.json", text);
      BOOST_CHECK_THROW(load({"--config", path}, {{"HOME", t.path()}}), ConfigError);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_stray_argument_that_may_hold_a_secret_is_not_echoed) {
  TempDir t;
  for (std::string stray : {"postgresql://alice:hunter2@db/sessions", "key=hunter2", "sk-hunter2:x"}) {
    BOOST_TEST_CONTEXT(stray) {
      try {
        load({"--provider", "echo", stray}, {{"HOME", t.path()}});
        BOOST_FAIL("a stray argument was accepted");
      } catch (const ConfigError& e) {
        std::string what = e.what();
        BOOST_TEST(what.find("hunter2") == std::string::npos, what);
        BOOST_TEST(what.find("#3") != std::string::npos, what);
      }
    }
  }
  // A plain word is still shown, so a typo is easy to see.
  try {
    load({"serve"}, {{"HOME", t.path()}});
    BOOST_FAIL("a stray argument was accepted");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("'serve'") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(max_outbox_bytes_from_every_source) {
  TempDir t;
  BOOST_TEST(load({}, {{"HOME", t.path()}}).max_outbox_bytes == 16777216);
  BOOST_TEST(load({"--max-outbox-bytes", "65536"}, {{"HOME", t.path()}}).max_outbox_bytes == 65536);
  BOOST_TEST(load({}, {{"HOME", t.path()}, {"DSH_ACP_MAX_OUTBOX_BYTES", "4096"}}).max_outbox_bytes == 4096);
  std::string path = t.write("c.json", R"({"maxOutboxBytes": 2048})");
  BOOST_TEST(load({"--config", path}, {{"HOME", t.path()}}).max_outbox_bytes == 2048);
  BOOST_CHECK_THROW(load({"--max-outbox-bytes", "1023"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--max-outbox-bytes", "-1"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_TEST(usage_text().find("--max-outbox-bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mcp_call_timeout_from_every_source) {
  TempDir t;
  BOOST_TEST(load({}, {{"HOME", t.path()}}).mcp_call_timeout_ms == 300000);
  BOOST_TEST(load({"--mcp-call-timeout-ms", "1500"}, {{"HOME", t.path()}}).mcp_call_timeout_ms == 1500);
  BOOST_TEST(load({}, {{"HOME", t.path()}, {"DSH_ACP_MCP_CALL_TIMEOUT_MS", "60000"}}).mcp_call_timeout_ms == 60000);
  std::string path = t.write("c.json", R"({"mcpCallTimeoutMs": 2000})");
  BOOST_TEST(load({"--config", path}, {{"HOME", t.path()}}).mcp_call_timeout_ms == 2000);
  BOOST_CHECK_THROW(load({"--mcp-call-timeout-ms", "0"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--mcp-call-timeout-ms", "86400001"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_TEST(usage_text().find("--mcp-call-timeout-ms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(lock_timeout_from_every_source) {
  TempDir t;
  BOOST_TEST(load({}, {{"HOME", t.path()}}).lock_timeout_ms == 2000);
  BOOST_TEST(load({"--lock-timeout-ms", "50"}, {{"HOME", t.path()}}).lock_timeout_ms == 50);
  BOOST_TEST(load({}, {{"HOME", t.path()}, {"DSH_ACP_LOCK_TIMEOUT_MS", "3600000"}}).lock_timeout_ms == 3600000);
  std::string path = t.write("c.json", R"({"lockTimeoutMs": 700})");
  BOOST_TEST(load({"--config", path}, {{"HOME", t.path()}}).lock_timeout_ms == 700);
  BOOST_CHECK_THROW(load({"--lock-timeout-ms", "0"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--lock-timeout-ms", "86400001"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_TEST(usage_text().find("--lock-timeout-ms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(default_mode_from_every_source) {
  TempDir t;
  BOOST_TEST(load({}, {{"HOME", t.path()}}).default_mode == "ask");
  BOOST_TEST(load({"--default-mode", "auto"}, {{"HOME", t.path()}}).default_mode == "auto");
  BOOST_TEST(load({}, {{"HOME", t.path()}, {"DSH_ACP_DEFAULT_MODE", "read-only"}}).default_mode == "read-only");
  std::string path = t.write("c.json", R"({"defaultMode": "auto"})");
  BOOST_TEST(load({"--config", path}, {{"HOME", t.path()}}).default_mode == "auto");
  BOOST_TEST(load({"--config", path, "--default-mode=ask"}, {{"HOME", t.path()}}).default_mode == "ask");
  BOOST_CHECK_THROW(load({"--default-mode", "yolo"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--config", t.write("bad.json", R"({"defaultMode": "auto_approve"})")}, {{"HOME", t.path()}}),
                    ConfigError);
  BOOST_TEST(usage_text().find("--default-mode ask|read-only|auto") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(compaction_settings_and_model_windows) {
  TempDir t;
  auto c = load({}, {{"HOME", t.path()}, {"DSH_ACP_PROVIDER", "echo"}});
  BOOST_TEST(c.compact_at == 0.8);
  BOOST_TEST(c.compact_keep_turns == 2);
  BOOST_TEST(!c.context_window);
  BOOST_TEST(c.context_windows.empty());
  std::string file = t.write("c.json", R"({"provider": "openai", "baseUrl": "http://127.0.0.1:1", "model": "local",
      "compactAt": 0.5, "contextWindow": 8192, "compactKeepTurns": 3,
      "models": ["plain", {"name": "big", "contextWindow": 131072}, {"name": "nowindow"}]})");
  c = load({"--config", file}, {{"HOME", t.path()}});
  BOOST_TEST(c.compact_at == 0.5);
  BOOST_TEST(c.compact_keep_turns == 3);
  BOOST_TEST((c.models == std::vector<std::string>{"plain", "big", "nowindow"}));
  BOOST_TEST(c.context_windows.at("local") == 8192);
  BOOST_TEST(c.context_windows.at("big") == 131072);
  BOOST_TEST(c.context_windows.count("plain") == 0u);
  // Flag over environment over file; 0 turns automatic compaction off.
  c = load({"--config", file, "--compact-at", "0"}, {{"HOME", t.path()}, {"DSH_ACP_COMPACT_AT", "0.9"}});
  BOOST_TEST(c.compact_at == 0.0);
  c = load({"--config", file, "--context-window=4096"}, {{"HOME", t.path()}, {"DSH_ACP_COMPACT_AT", "0.9"}});
  BOOST_TEST(c.compact_at == 0.9);
  BOOST_TEST(c.context_windows.at("local") == 4096);
  BOOST_CHECK_THROW(load({"--compact-at", "1.5"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--compact-at", "x"}, {{"HOME", t.path()}}), ConfigError);
  BOOST_CHECK_THROW(load({"--compact-keep-turns", "0"}, {{"HOME", t.path()}}), ConfigError);
  for (std::string bad : {R"({"models": [{"contextWindow": 9000}]})", R"({"models": [{"name": "a", "window": 9000}]})",
                          R"({"models": [{"name": "a", "contextWindow": 10}]})", R"({"compactAt": "0.5"})"}) {
    file = t.write("bad.json", bad);
    BOOST_TEST_CONTEXT(bad) { BOOST_CHECK_THROW(load({"--config", file}, {{"HOME", t.path()}}), ConfigError); }
  }
}

// schemas/config.schema.json is what `dsh-acp --print-config-schema` writes from the option table
// (regenerate it with `build/dsh-acp --print-config-schema > schemas/config.schema.json`), and every
// key it documents behaves as documented.
BOOST_AUTO_TEST_CASE(the_config_schema_matches_the_options) {
  TempDir t;
  std::ifstream in(std::string(DSH_SCHEMA_DIR) + "/config.schema.json");
  std::stringstream ss;
  ss << in.rdbuf();
  BOOST_TEST(ss.str() == config_schema_text());
  boost::json::object schema = boost::json::parse(ss.str()).as_object();
  const auto& props = schema.at("properties").as_object();
  // Every flag in --help has a schema key (and the reverse, except the file-only keys).
  std::string help = usage_text();
  std::size_t flags = 0;
  for (std::size_t at = 0; (at = help.find("\n  --", at)) != std::string::npos; ++at) {
    std::string flag = help.substr(at + 5, help.find_first_of(" \n", at + 5) - (at + 5));
    if (flag == "help" || flag == "version" || flag == "config" || flag == "setup" || flag == "print-config-schema") continue;
    std::string key;
    for (std::size_t i = 0; i < flag.size(); ++i)
      key += flag[i] == '-' ? static_cast<char>(std::toupper(flag[++i])) : flag[i];
    BOOST_TEST_CONTEXT(flag) { BOOST_TEST(props.contains(key)); }
    ++flags;
  }
  BOOST_TEST(props.size() == flags + 4);  // + stores, models, deepseekApiKey, openaiApiKey
  // Every key accepts its documented default (or a sample) and integer keys their bounds.
  for (const auto& [key, spec_value] : props) {
    const auto& spec = spec_value.as_object();
    boost::json::value sample = "x";
    if (spec.contains("default")) sample = spec.at("default");
    else if (spec.contains("enum")) sample = spec.at("enum").as_array().front();
    else if (spec.at("type") == "array") sample = boost::json::array{"m"};
    else if (spec.at("type") == "integer") sample = spec.at("minimum");
    BOOST_TEST_CONTEXT(key) {
      std::string file = t.write("c.json", boost::json::serialize(boost::json::object{{std::string(key), sample}}));
      BOOST_CHECK_NO_THROW(load({"--config", file}, {{"HOME", t.path()}}));
      if (spec.contains("minimum")) {
        std::int64_t min = spec.at("minimum").to_number<std::int64_t>();
        file = t.write("c.json", "{\"" + std::string(key) + "\": " + std::to_string(min - 1) + "}");
        BOOST_CHECK_THROW(load({"--config", file}, {{"HOME", t.path()}}), ConfigError);
      }
      if (spec.contains("maximum")) {
        std::int64_t max = spec.at("maximum").to_number<std::int64_t>();
        file = t.write("c.json", "{\"" + std::string(key) + "\": " + std::to_string(max) + "}");
        BOOST_CHECK_NO_THROW(load({"--config", file}, {{"HOME", t.path()}}));
        file = t.write("c.json", "{\"" + std::string(key) + "\": " + std::to_string(max + 1) + "}");
        BOOST_CHECK_THROW(load({"--config", file}, {{"HOME", t.path()}}), ConfigError);
      }
    }
  }
}

// One default per option, seen the same three ways: the schema's "default", --help's "(default X)" on
// the option's line, and the configuration nothing was set for, which must equal the one where the
// option is set to that default explicitly (so the schema and --help name what the struct holds, and
// each row reads the member it writes).
BOOST_AUTO_TEST_CASE(each_default_is_the_same_in_the_struct_the_help_and_the_schema) {
  TempDir t;
  const Environment env{{"HOME", t.path()}};
  const Config unset = load({}, env);
  const auto schema = boost::json::parse(config_schema_text()).as_object();
  const std::string help = usage_text();
  std::size_t defaults = 0;
  for (const auto& [key, property] : schema.at("properties").as_object()) {
    const auto* d = property.as_object().if_contains("default");
    if (!d) continue;
    std::string flag;
    for (char ch : std::string(key)) {
      if (std::isupper(static_cast<unsigned char>(ch))) flag += std::string("-") + char(std::tolower(ch));
      else flag += ch;
    }
    std::string text = d->is_string() ? std::string(d->get_string()) : boost::json::serialize(*d);
    if (d->is_double()) {  // as a person writes it, as --help does (Boost.JSON prints 0.8 as 8E-1)
      std::ostringstream o;
      o << d->get_double();
      text = o.str();
    }
    BOOST_TEST_CONTEXT(flag) {
      const std::size_t line = help.find("\n  --" + flag + " ");
      BOOST_TEST_REQUIRE(line != std::string::npos);
      const std::string row = help.substr(line, help.find('\n', line + 1) - line);
      BOOST_TEST(row.find("(default " + text + ")") != std::string::npos, row);
      BOOST_TEST((load({"--" + flag + "=" + text}, env) == unset));
      ++defaults;
    }
  }
  BOOST_TEST(defaults >= 20u);
  // The provider's defaults come from one place too: what --help says is what a bare start uses.
  BOOST_TEST(help.find(std::string("(deepseek: ") + unset.model + ";") != std::string::npos);
  BOOST_TEST(help.find(std::string("(deepseek: ") + unset.base_url + ";") != std::string::npos);
  BOOST_TEST(help.substr(help.find("\n  --model ")).find("(default") > help.substr(help.find("\n  --model ")).find('\n', 1));
}

// Issue 15: several roots, and where the harness's own root is.
BOOST_AUTO_TEST_CASE(store_roots_from_flags_environment_and_file) {
  TempDir t;
  Config c = load({"--store", "/a", "--store", "/b"}, {{"HOME", t.path()}});
  BOOST_TEST(c.stores == (std::vector<std::string>{"/a", "/b"}));
  BOOST_TEST(c.store == "/a");
  BOOST_TEST(c.stores_configured);
  BOOST_TEST(c.harness_store == t.path() + "/.dsh/sessions");
  std::string file = t.write("c.json", R"({"stores": ["/x", "/y"], "storeGeneration": "0.1"})");
  c = load({"--config", file}, {{"HOME", t.path()}});
  BOOST_TEST(c.stores == (std::vector<std::string>{"/x", "/y"}));
  BOOST_TEST(c.store_generation == "0.1");
  c = load({"--config", file}, {{"HOME", t.path()}, {"DSH_ACP_STORE", "/env"}});
  BOOST_TEST(c.stores == (std::vector<std::string>{"/env"}));
  c = load({"--config", file, "--store", "/flag"}, {{"HOME", t.path()}});
  BOOST_TEST(c.stores == (std::vector<std::string>{"/flag"}));
  c = load({}, {{"HOME", t.path()}, {"DSH_HOME", "/opt/dsh"}});
  BOOST_TEST(!c.stores_configured);
  BOOST_TEST(c.stores == (std::vector<std::string>{t.path() + "/.local/share/dsh-acp/sessions"}));
  BOOST_TEST(c.harness_store == "/opt/dsh/sessions");
  c = load({}, {{"HOME", t.path()}, {"DSH_HOME", "  "}});
  BOOST_TEST(c.harness_store == t.path() + "/.dsh/sessions");
  for (const char* bad : {R"({"stores": []})", R"({"stores": "/x"})", R"({"stores": [""]})", R"({"storeGeneration": "0.2"})"}) {
    file = t.write("bad.json", bad);
    BOOST_TEST_CONTEXT(bad) { BOOST_CHECK_THROW(load({"--config", file}, {{"HOME", t.path()}}), ConfigError); }
  }
  BOOST_CHECK_THROW(load({"--store-generation", "1.0"}, {{"HOME", t.path()}}), ConfigError);
}

// "~/x" names $HOME/x wherever it comes from (taken literally it made a ./~/x directory in whatever
// directory the editor started us in); a relative path in the config file is taken from the file's
// directory, one on the command line or in the environment from the cwd, as every program does.
BOOST_AUTO_TEST_CASE(store_paths_expand_tilde_and_resolve_relative_to_the_config_file) {
  TempDir t;
  const Environment env{{"HOME", "/home/u"}};
  std::string file = t.write("c.json", R"({"store": "~/x"})");
  BOOST_TEST(load({"--config", file}, env).stores == (std::vector<std::string>{"/home/u/x"}));
  file = t.write("c.json", R"({"stores": ["~/a", "~", "rel/b", "/abs", "postgresql://me@/db"]})");
  BOOST_TEST(load({"--config", file}, env).stores ==
             (std::vector<std::string>{"/home/u/a", "/home/u", t.path() + "/rel/b", "/abs", "postgresql://me@/db"}));
  file = t.write("c.json", R"({"store": "sessions", "logFile": "logs/acp.log", "systemPrompt": "~/prompt.md"})");
  Config c = load({"--config", file}, env);
  BOOST_TEST(c.store == t.path() + "/sessions");
  BOOST_TEST(c.log_file == t.path() + "/logs/acp.log");
  BOOST_TEST(c.system_prompt == "/home/u/prompt.md");
  // A config file named relatively: its directory made absolute.
  char cwd[4096];
  BOOST_REQUIRE(::getcwd(cwd, sizeof cwd));
  BOOST_REQUIRE(::chdir(t.path().c_str()) == 0);
  c = load({"--config", "c.json"}, env);
  BOOST_REQUIRE(::chdir(cwd) == 0);
  BOOST_TEST(c.store == t.path() + "/sessions");

  BOOST_TEST(load({"--store=~/x"}, env).stores == (std::vector<std::string>{"/home/u/x"}));
  BOOST_TEST(load({"--store", "~"}, env).stores == (std::vector<std::string>{"/home/u"}));
  BOOST_TEST(load({}, {{"HOME", "/home/u/"}, {"DSH_ACP_STORE", "~/env"}}).stores == (std::vector<std::string>{"/home/u/env"}));
  BOOST_TEST(load({"--store", "rel", "--store", "~x"}, env).stores == (std::vector<std::string>{"rel", "~x"}));
  BOOST_TEST(load({}, {{"HOME", "/home/u"}, {"DSH_ACP_STORE", "rel"}}).stores == (std::vector<std::string>{"rel"}));
  BOOST_CHECK_THROW(load({"--store", "~/x"}, {}), ConfigError);  // no $HOME to expand it with
}

BOOST_AUTO_TEST_CASE(help_and_version_are_actions) {
  BOOST_TEST((load_config({"--store", "/x", "--help"}, {}).action == CliAction::help));
  BOOST_TEST((load_config({"--version"}, {}).action == CliAction::version));
  BOOST_TEST((load_config({"--print-config-schema"}, {}).action == CliAction::config_schema));
  BOOST_TEST(usage_text().find("--max-frame-bytes") != std::string::npos);
}

// A user reading --help learns where everything is: both homes and every default path.
BOOST_AUTO_TEST_CASE(help_names_the_homes_and_the_default_paths) {
  const std::string help = usage_text();
  for (const char* text : {"DSH_ACP_HOME", "DSH_HOME", "~/.dsh", "$DSH_HOME/sessions", "$XDG_CONFIG_HOME/dsh-acp/config.json",
                           "$XDG_DATA_HOME/dsh-acp/sessions", "$XDG_STATE_HOME/dsh-acp/dsh-acp.log",
                           "$XDG_CACHE_HOME/dsh-acp", "~/.local/share", "config.json, sessions/"})
    BOOST_TEST_CONTEXT(text) { BOOST_TEST(help.find(text) != std::string::npos); }
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
  Config c = load({"--config", t.path() + "/config.json"}, {{"HOME", t.path()}});
  BOOST_TEST(c.deepseek_api_key == "file-ds");
  BOOST_TEST(c.openai_api_key == "file-oa");
  c = load({"--config", t.path() + "/config.json"}, {{"HOME", t.path()}, {"DEEPSEEK_API_KEY", "env-ds"}});
  BOOST_TEST(c.deepseek_api_key == "env-ds");  // environment over file
  BOOST_TEST(c.openai_api_key == "file-oa");
  t.write("config.json", R"({"deepseekApiKey": 5})");
  BOOST_CHECK_THROW(load({"--config", t.path() + "/config.json"}, {{"HOME", t.path()}}), ConfigError);
  // No flag for keys: they would be visible to every user in `ps`.
  BOOST_CHECK_THROW(load({"--deepseek-api-key", "k"}, {{"HOME", t.path()}}), ConfigError);
}

// The key `--setup` stores lives in the config directory and stands in for DEEPSEEK_API_KEY, ahead
// of the config file's key (issue 28).
BOOST_AUTO_TEST_CASE(the_setup_key_file_comes_after_the_environment_before_the_config_file) {
  TempDir t;
  BOOST_TEST(load({}, {{"HOME", t.path()}}).key_file == t.path() + "/.config/dsh-acp/deepseek-api-key");
  BOOST_TEST(load({}, {{"HOME", t.path()}, {"XDG_CONFIG_HOME", t.path() + "/x"}}).key_file ==
             t.path() + "/x/dsh-acp/deepseek-api-key");
  const Environment env{{"HOME", t.path()}, {"DSH_ACP_HOME", t.path()}};
  BOOST_TEST(load({}, env).key_file == t.path() + "/deepseek-api-key");
  t.write("config.json", R"({"deepseekApiKey": "file-ds"})");
  BOOST_TEST(load({}, env).deepseek_api_key == "file-ds");
  acp::support::write_key_file(t.path() + "/deepseek-api-key", "sk-stored");
  BOOST_TEST(load({}, env).deepseek_api_key == "sk-stored");
  Environment with_key = env;
  with_key["DEEPSEEK_API_KEY"] = "sk-env";
  BOOST_TEST(load({}, with_key).deepseek_api_key == "sk-env");
  // --setup is read with the other flags (they name the config directory).
  CliResult setup = load_config({"--setup", "--provider", "deepseek"}, env);
  BOOST_TEST((setup.action == CliAction::setup));
  BOOST_TEST(setup.config.key_file == t.path() + "/deepseek-api-key");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(store_urls)

BOOST_AUTO_TEST_CASE(a_password_in_a_store_url_is_refused_wherever_it_comes_from_and_never_echoed) {
  TempDir t;
  auto refused = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("s3cret") == std::string::npos);
      BOOST_TEST(what.find("PGPASSFILE") != std::string::npos);
      return true;
    }
    return false;
  };
  BOOST_TEST(refused([&] { server_load({"--store", "postgresql://alice:s3cret@h/d"}, {{"DSH_ACP_HOME", t.path()}}); }));
  BOOST_TEST(refused([&] { server_load({}, {{"DSH_ACP_HOME", t.path()}, {"DSH_ACP_STORE", "postgres://h/d?password=s3cret"}}); }));
  t.write("config.json", R"({"stores": ["/tmp/a", "postgresql://bob:s3cret@/d"]})");
  BOOST_TEST(refused([&] { server_load({}, {{"DSH_ACP_HOME", t.path()}}); }));
  // Without a password the URL is a store like any root, beside file roots.
  t.write("config.json", R"({"stores": ["/tmp/a", "postgresql://bob@/d?host=/run/pg"]})");
  Config c = server_load({}, {{"DSH_ACP_HOME", t.path()}});
  BOOST_TEST(c.stores.size() == 2u);
  BOOST_TEST(c.stores[1] == "postgresql://bob@/d?host=/run/pg");
}

BOOST_AUTO_TEST_SUITE_END()

