#include "config.hpp"

#include "support/json_number.hpp"
#include "support/json_text.hpp"
#include "support/key_file.hpp"
#include "support/paths.hpp"
#include "support/provider_defaults.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

extern char** environ;

namespace acp::support {
namespace {

namespace json = boost::json;

enum class Kind { string, path, integer, boolean, choice, fraction };

// One row per option: its flag, environment variable and config-file key are derived from `flag`,
// its default is read off a default-constructed Config through `get`, and --help and the config
// file's JSON Schema (config_schema_text) are both written from this table, so none can drift.
struct Option {
  const char* flag;  ///< without the leading "--"
  Kind kind;
  std::string help;  ///< one line of --help; also the schema's description unless `note` says more
  std::function<void(Config&, const std::string&)> set;  ///< receives the validated text form
  std::function<json::value(const Config&)> get = {};    ///< the value as the schema writes it; null: no default
  std::int64_t min = 0;
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> choices = {};
  const char* note = nullptr;  ///< the schema's description when it needs more than the help line
};

std::int64_t parse_integer(const std::string& text, const Option& opt, const std::string& origin) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw ConfigError(origin + ": --" + opt.flag + " expects an integer, got '" + text + "'");
  if (value < opt.min || value > opt.max)
    throw ConfigError(origin + ": --" + opt.flag + " must be between " + std::to_string(opt.min) + " and " +
                      std::to_string(opt.max) + ", got " + text);
  return value;
}

template <class Member> auto int_setter(Member Config::*member) {
  return [member](Config& c, const std::string& v) { c.*member = std::stoll(v); };
}
template <class Member> auto str_setter(Member Config::*member) {
  return [member](Config& c, const std::string& v) { c.*member = v; };
}
template <class Member> auto getter(Member Config::*member) {
  return [member](const Config& c) { return json::value(c.*member); };
}
// A string whose default is "unset" (decided later from other settings): no default to show.
template <class Member> auto text_getter(Member Config::*member) {
  return [member](const Config& c) { return (c.*member).empty() ? json::value(nullptr) : json::value(c.*member); };
}

// Longer than 80 lines: a table, one row per option, which --help, the environment, the config file and
// the schema are all derived from; split, it would stop being the one place they are read from.
const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {"store", Kind::path, "session store: a root directory or a postgresql:// URL (repeat for several; new sessions go to the first)",
       str_setter(&Config::store), nullptr, 0, std::numeric_limits<std::int64_t>::max(), {},
       "session store root (a directory: a leading ~ is $HOME, a relative path is taken from this file's directory) or a "
       "postgresql:// URL"},
      {"store-compression", Kind::choice, "encoding of a new store root (zstd; an existing root keeps its own)",
       str_setter(&Config::store_compression), nullptr, 0, 0, {"zstd", "none"}},
      {"store-generation", Kind::choice,
       "layout of a new store root: the harness's 45fc or 0.1 (default: 0.1 for the harness's own root, else 45fc)",
       str_setter(&Config::store_generation), nullptr, 0, 0, {"45fc", "0.1"},
       "layout and event shapes of a new store root (the harness's 45fc or 0.1.1); an existing root keeps its own; "
       "default 0.1 for the harness's own root, else 45fc"},
      {"provider", Kind::choice, "model provider", str_setter(&Config::provider), getter(&Config::provider), 0, 0,
       {"deepseek", "openai", "echo"}},
      {"model", Kind::string, std::string("model name (deepseek: ") + kDeepSeekDefaultModel + "; openai: required)",
       str_setter(&Config::model)},
      {"base-url", Kind::string, std::string("provider base URL (deepseek: ") + kDeepSeekBaseUrl + "; openai: required)",
       str_setter(&Config::base_url)},
      {"allow-insecure-http", Kind::boolean, "allow plain http:// to non-loopback hosts",
       [](Config& c, const std::string& v) { c.allow_insecure_http = v == "true"; }, getter(&Config::allow_insecure_http)},
      {"ca-file", Kind::path, "extra trusted CA certificate (PEM)", str_setter(&Config::ca_file), nullptr, 0,
       std::numeric_limits<std::int64_t>::max(), {},
       "extra trusted CA certificate (PEM); a leading ~ is $HOME, a relative path is taken from this file's directory"},
      {"system-prompt", Kind::path, "system prompt file ({cwd} and {date} are replaced)",
       str_setter(&Config::system_prompt), nullptr, 0, std::numeric_limits<std::int64_t>::max(), {},
       "file with {cwd} and {date} placeholders; a leading ~ is $HOME, a relative path is taken from this file's directory"},
      {"connect-timeout-ms", Kind::integer, "provider connect timeout", int_setter(&Config::connect_timeout_ms),
       getter(&Config::connect_timeout_ms), 1},
      {"idle-timeout-ms", Kind::integer, "provider idle timeout (no SSE data event)", int_setter(&Config::idle_timeout_ms),
       getter(&Config::idle_timeout_ms), 1},
      {"request-timeout-ms", Kind::integer, "provider overall deadline", int_setter(&Config::request_timeout_ms),
       getter(&Config::request_timeout_ms), 1},
      {"max-retries", Kind::integer, "provider retries before output", int_setter(&Config::max_retries),
       getter(&Config::max_retries), 0, 20},
      {"retry-base-ms", Kind::integer, "first retry delay", int_setter(&Config::retry_base_ms), getter(&Config::retry_base_ms), 0},
      {"echo-delay-ms", Kind::integer, "pause between echo chunks", int_setter(&Config::echo_delay_ms),
       getter(&Config::echo_delay_ms), 0, 3600000},
      {"max-references", Kind::integer, "distinct sessions one prompt may reference", int_setter(&Config::max_references),
       getter(&Config::max_references), 1, 3},
      {"candidate-limit", Kind::integer, "default number of reference candidates", int_setter(&Config::candidate_limit),
       getter(&Config::candidate_limit), 1, 9007199254740991},
      {"max-reference-bytes", Kind::integer, "serialized bytes per referenced session",
       int_setter(&Config::max_reference_bytes), getter(&Config::max_reference_bytes), 1, 9007199254740991},
      {"max-frame-bytes", Kind::integer, "largest accepted input frame", int_setter(&Config::max_frame_bytes),
       getter(&Config::max_frame_bytes), 1024, std::int64_t(1) << 40},
      {"max-outbox-bytes", Kind::integer, "output bytes queued for the client before reading pauses",
       int_setter(&Config::max_outbox_bytes), getter(&Config::max_outbox_bytes), 1024, std::int64_t(1) << 40, {},
       "bytes of frames queued for the client before the server stops reading requests and producers wait"},
      {"max-held-prompt-bytes", Kind::integer, "prompt text all sessions' waiting and running prompts may hold",
       int_setter(&Config::max_held_prompt_bytes), getter(&Config::max_held_prompt_bytes), 1024, std::int64_t(1) << 40, {},
       "bytes of prompt text the prompts of all sessions, waiting or running, may hold together; past it a prompt is "
       "answered Server busy (any one prompt is taken when none is held)"},
      {"context-window", Kind::integer, "context window of the configured model in tokens (enables automatic compaction)",
       [](Config& c, const std::string& v) { c.context_window = std::stoll(v); }, nullptr, 256, std::int64_t(1) << 40, {},
       "context window of the configured model in tokens; DeepSeek's models default to their published window, other "
       "models have none (no automatic compaction)"},
      {"image-input", Kind::boolean,
       "the configured model takes images in prompts (openai provider; echo always does, deepseek never)",
       [](Config& c, const std::string& v) { c.image_input = v == "true"; }, getter(&Config::image_input)},
      {"compact-at", Kind::fraction, "compact before a request estimated above this share of the window (0 = never)",
       [](Config& c, const std::string& v) { c.compact_at = std::stod(v); }, getter(&Config::compact_at), 0, 1, {},
       "compact before a model request estimated above this share of the usable window; 0 turns automatic compaction off"},
      {"compact-keep-turns", Kind::integer, "most recent user turns a compaction keeps",
       int_setter(&Config::compact_keep_turns), getter(&Config::compact_keep_turns), 1, 1000},
      {"max-steps", Kind::integer, "model requests per turn, tool calls between them",
       int_setter(&Config::max_steps), getter(&Config::max_steps), 1, 10000, {},
       "model requests per prompt turn (each step may call tools); a turn that reaches it ends max_turn_requests"},
      {"max-tool-result-bytes", Kind::integer, "a longer tool result is cut, head and tail kept",
       int_setter(&Config::max_tool_result_bytes), getter(&Config::max_tool_result_bytes), 1024, 16777216},
      {"mcp-call-timeout-ms", Kind::integer, "an MCP tool call not answered by then is cancelled",
       int_setter(&Config::mcp_call_timeout_ms), getter(&Config::mcp_call_timeout_ms), 1, 86400000, {},
       "an MCP server's tools/call not answered within this many milliseconds is cancelled (notifications/cancelled) "
       "and the model gets an error result naming the server"},
      {"lock-timeout-ms", Kind::integer, "wait for another process's session lock before answering Session busy",
       int_setter(&Config::lock_timeout_ms), getter(&Config::lock_timeout_ms), 1, 86400000},
      {"default-mode", Kind::choice, "mode of a new session, and of one whose log holds no mode choice",
       str_setter(&Config::default_mode), getter(&Config::default_mode), 0, 0, {"ask", "read-only", "auto"},
       "the mode of a new session, and of a loaded or resumed one whose log holds no mode choice (a choice the user "
       "made, session/set_mode or the mode option, is logged and wins)"},
      {"log-file", Kind::path, "log file (mode 0600, appended)", str_setter(&Config::log_file), nullptr, 0,
       std::numeric_limits<std::int64_t>::max(), {},
       "log file (mode 0600, appended); a leading ~ is $HOME, a relative path is taken from this file's directory"},
      {"log-level", Kind::choice, "log verbosity", str_setter(&Config::log_level), getter(&Config::log_level), 0, 0,
       {"error", "warn", "info", "debug"}},
  };
  return table;
}

std::string camel_case(const char* flag) {
  std::string out;
  bool upper = false;
  for (const char* p = flag; *p; ++p) {
    if (*p == '-') {
      upper = true;
    } else {
      out.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p);
      upper = false;
    }
  }
  return out;
}

std::string env_name(const char* flag) {
  std::string out = "DSH_ACP_";
  for (const char* p = flag; *p; ++p) out.push_back(*p == '-' ? '_' : static_cast<char>(std::toupper(*p)));
  return out;
}

const Option* find_flag(std::string_view name) {
  for (const auto& opt : options())
    if (name == opt.flag) return &opt;
  return nullptr;
}

// Validates `text` for `opt` and returns its canonical text form.
std::string validate(const Option& opt, const std::string& text, const std::string& origin) {
  switch (opt.kind) {
  case Kind::integer:
    return std::to_string(parse_integer(text, opt, origin));
  case Kind::boolean:
    if (text == "true" || text == "1" || text == "yes") return "true";
    if (text == "false" || text == "0" || text == "no") return "false";
    throw ConfigError(origin + ": --" + opt.flag + " expects true or false, got '" + text + "'");
  case Kind::choice:
    for (const auto& c : opt.choices)
      if (c == text) return text;
    {
      std::string allowed;
      for (const auto& c : opt.choices) allowed += (allowed.empty() ? "" : ", ") + c;
      throw ConfigError(origin + ": --" + opt.flag + " must be one of " + allowed + ", got '" + text + "'");
    }
  case Kind::fraction: {
    std::size_t used = 0;
    double value = -1;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !(value >= 0 && value <= 1))
      throw ConfigError(origin + ": --" + opt.flag + " expects a number from 0 to 1, got '" + text + "'");
    return text;
  }
  case Kind::path:
  case Kind::string:
    if (text.empty()) throw ConfigError(origin + ": --" + opt.flag + " must not be empty");
    return text;
  }
  return text;
}

std::string env_or(const Environment& env, const std::string& key, const std::string& fallback) {
  auto it = env.find(key);
  return it != env.end() && !it->second.empty() ? it->second : fallback;
}

std::string xdg_dir(const Environment& env, const char* var, const char* home_relative) {
  std::string base = env_or(env, var, "");
  if (!is_absolute_path(base)) base = env_or(env, "HOME", "/tmp") + "/" + home_relative;
  return base + "/dsh-acp";
}

// As the harness resolves it (release 0.1.1): $DSH_HOME unless empty or blank, else ~/.dsh;
// a leading `~` expanded, then made absolute and normal.
std::string harness_home_dir(const Environment& env) {
  std::string home = env_or(env, "HOME", "/tmp");
  std::string dir = env_or(env, "DSH_HOME", "");
  if (dir.find_first_not_of(" \t\n\r\f\v") == std::string::npos) dir = home + "/.dsh";
  else if (dir == "~") dir = home;
  else if (dir.rfind("~/", 0) == 0) dir = home + dir.substr(1);
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(dir, ec).lexically_normal();
  std::string out = ec ? dir : path.string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// A path setting as given: `~` and `~/…` name $HOME (a shell expands them on the command line, but
// not in `--store=~/x`, the environment or a JSON file: taken literally they would make a `./~`
// directory wherever the editor started us); `base`, when not empty, is the directory a relative
// path is taken from (the config file's). URLs (a `postgresql://` store) are left alone.
std::string resolve_path(const std::string& text, const Environment& env, const std::string& base,
                         const std::string& origin) {
  if (text.find("://") != std::string::npos) return text;
  if (text == "~" || text.rfind("~/", 0) == 0) {
    std::string home = env_or(env, "HOME", "");
    if (!is_absolute_path(home))
      throw ConfigError(origin + ": '" + text + "' starts with ~, but $HOME is not set to an absolute path");
    while (home.size() > 1 && home.back() == '/') home.pop_back();
    return home + text.substr(1);
  }
  if (base.empty() || is_absolute_path(text)) return text;
  return base + "/" + text;
}

// The directory relative paths in the config file at `path` are taken from.
std::string directory_of(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  return absolute.lexically_normal().parent_path().string();
}

std::string read_file(const std::string& path, bool& exists) {
  std::ifstream in(path, std::ios::binary);
  exists = static_cast<bool>(in);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's "stores": the roots, each path resolved as a path setting is.
void read_stores(const json::value& value, const std::string& origin, const Environment& env, const std::string& base,
                 Config& config) {
  if (!value.is_array() || value.get_array().empty()) throw ConfigError(origin + " must be a non-empty array of paths");
  config.stores.clear();
  for (const auto& root : value.get_array()) {
    if (!root.is_string() || root.get_string().empty()) throw ConfigError(origin + " entries must be non-empty strings");
    config.stores.push_back(resolve_path(std::string(root.get_string()), env, base, origin));
  }
}

// The file's "models": names, or {"name": "...", "contextWindow": N, "imageInput": B}: a model
// choice with its window and whether it takes images.
void read_models(const json::value& value, const std::string& origin, Config& config) {
  if (!value.is_array()) throw ConfigError(origin + " must be an array of strings");
  config.models.clear();
  for (const auto& m : value.get_array()) {
    if (m.is_string() && !m.get_string().empty()) {
      config.models.emplace_back(m.get_string());
      continue;
    }
    const json::object* entry = m.if_object();
    const json::value* name = entry ? entry->if_contains("name") : nullptr;
    if (!name || !name->is_string() || name->get_string().empty())
      throw ConfigError(origin + " entries must be non-empty strings or objects {\"name\", \"contextWindow\", \"imageInput\"}");
    for (const auto& field : *entry)
      if (field.key() != "name" && field.key() != "contextWindow" && field.key() != "imageInput")
        throw ConfigError(origin + ": \"" + std::string(field.key()) + "\" is not a known model setting");
    config.models.emplace_back(name->get_string());
    if (const json::value* window = entry->if_contains("contextWindow")) {
      auto tokens = json_integer(*window, 256);
      if (!tokens) throw ConfigError(origin + ": contextWindow must be an integer of at least 256");
      config.context_windows[std::string(name->get_string())] = *tokens;
    }
    if (const json::value* images = entry->if_contains("imageInput")) {
      if (!images->is_bool()) throw ConfigError(origin + ": imageInput must be true or false");
      if (images->get_bool()) config.image_models.insert(std::string(name->get_string()));
    }
  }
}

// A file value of an option in the text form a flag would give it (not yet validated), after
// checking its JSON type.
std::string option_text(const Option& opt, const json::value& v, const std::string& origin) {
  if (opt.kind == Kind::integer) {
    if (!v.is_int64() && !v.is_uint64()) throw ConfigError(origin + " must be an integer");
    return json::serialize(v);
  }
  if (opt.kind == Kind::fraction) {
    if (!v.is_number()) throw ConfigError(origin + " must be a number");
    return json::serialize(v);
  }
  if (opt.kind == Kind::boolean) {
    if (!v.is_bool()) throw ConfigError(origin + " must be true or false");
    return v.get_bool() ? "true" : "false";
  }
  if (!v.is_string()) throw ConfigError(origin + " must be a string");
  return std::string(v.get_string());
}

// Reads the config file into option-name → text form, validating keys and value types.
std::map<std::string, std::string> read_config_file(const std::string& path, Config& config, bool required,
                                                    const Environment& env) {
  bool exists = false;
  std::string text = read_file(path, exists);
  std::map<std::string, std::string> values;
  if (!exists) {
    if (required) throw ConfigError("config file " + path + ": cannot be read (" + std::strerror(errno) + ")");
    return values;
  }
  config.config_file = path;
  const std::string base = directory_of(path);
  boost::system::error_code ec;
  json::value doc = support::parse_json(text, ec);
  if (ec) throw ConfigError("config file " + path + ": invalid JSON: " + ec.message());
  if (!doc.is_object()) throw ConfigError("config file " + path + ": the top level must be an object");
  for (const auto& kv : doc.get_object()) {
    std::string key(kv.key());
    std::string origin = "config file " + path + ": key \"" + key + "\"";
    if (key == "stores") {
      read_stores(kv.value(), origin, env, base, config);
      continue;
    }
    if (key == "models") {
      read_models(kv.value(), origin, config);
      continue;
    }
    // API keys live in the file or the environment only: a flag would show them in `ps`.
    if (key == "deepseekApiKey" || key == "openaiApiKey") {
      if (!kv.value().is_string()) throw ConfigError(origin + " must be a string");
      (key == "deepseekApiKey" ? config.deepseek_api_key : config.openai_api_key) = kv.value().get_string();
      continue;
    }
    const Option* opt = nullptr;
    for (const auto& o : options())
      if (camel_case(o.flag) == key) opt = &o;
    if (!opt) throw ConfigError(origin + " is not a known setting");
    values[opt->flag] = validate(*opt, option_text(*opt, kv.value(), origin), origin);
    if (opt->kind == Kind::path) values[opt->flag] = resolve_path(values[opt->flag], env, base, origin);
  }
  return values;
}

// What the command line says: the flags' text forms by option, every --store, --config.
struct CommandLine {
  std::optional<CliAction> action;  ///< help, version or schema: nothing else is read
  bool setup = false;
  std::map<std::string, std::string> from_flags;
  std::vector<std::string> stores;  // --store may be repeated
  std::optional<std::string> config_path;
};

// A stray argument may be a store URL or a key pasted in the wrong place: one that could carry a
// secret is named by its position only, so the error never prints it.
[[noreturn]] void refuse_argument(const std::string& arg, std::size_t i) {
  bool may_hold_secret = arg.size() > 64 || arg.find_first_of("@=:%") != std::string::npos;
  if (may_hold_secret)
    throw ConfigError("unexpected argument #" + std::to_string(i + 1) + " (not shown: it may hold a secret; see --help)");
  throw ConfigError("unexpected argument '" + arg + "' (see --help)");
}

CommandLine parse_command_line(const std::vector<std::string>& args, const Environment& env) {
  CommandLine cl;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") cl.action = CliAction::help;
    else if (arg == "--version") cl.action = CliAction::version;
    else if (arg == "--print-config-schema") cl.action = CliAction::config_schema;
    if (cl.action) return cl;
    if (arg == "--setup") {
      // Read with the rest: the key goes to the config directory the same flags and variables name.
      cl.setup = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) refuse_argument(arg, i);
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "config") {
      if (!value) {
        if (i + 1 >= args.size()) throw ConfigError("--config needs a value");
        value = args[++i];
      }
      cl.config_path = resolve_path(*value, env, "", "command line: --config");
      continue;
    }
    const Option* opt = find_flag(name);
    if (!opt) throw ConfigError("unknown option --" + name + " (see --help)");
    if (!value) {
      if (opt->kind == Kind::boolean) value = "true";
      else if (i + 1 >= args.size()) throw ConfigError("--" + name + " needs a value");
      else value = args[++i];
    }
    std::string& text = cl.from_flags[opt->flag];
    text = validate(*opt, *value, "command line");
    if (opt->kind == Kind::path) text = resolve_path(text, env, "", "command line: --" + name);
    if (name == "store") cl.stores.push_back(text);
  }
  return cl;
}

// Each option from its flag, else its environment variable, else the config file.
void apply_options(Config& config, const std::map<std::string, std::string>& from_flags,
                   const std::map<std::string, std::string>& from_file, const Environment& env) {
  for (const auto& opt : options()) {
    std::string env_value = env_or(env, env_name(opt.flag), "");
    if (auto it = from_flags.find(opt.flag); it != from_flags.end()) opt.set(config, it->second);
    else if (!env_value.empty()) {
      const std::string origin = "environment " + env_name(opt.flag);
      std::string value = validate(opt, env_value, origin);
      opt.set(config, opt.kind == Kind::path ? resolve_path(value, env, "", origin) : value);
    }
    else if (auto f = from_file.find(opt.flag); f != from_file.end()) opt.set(config, f->second);
  }
}

// Roots: every --store flag, else DSH_ACP_STORE, else the file's "stores" (or "store"), else ours.
void settle_stores(Config& config, const std::vector<std::string>& flag_stores, const Environment& env,
                   const std::string& home) {
  if (!flag_stores.empty()) config.stores = flag_stores;
  else if (!env_or(env, "DSH_ACP_STORE", "").empty()) config.stores = {config.store};
  else if (config.stores.empty() && !config.store.empty()) config.stores = {config.store};
  config.stores_configured = !config.stores.empty();
  if (config.stores.empty())
    config.stores = {home.empty() ? xdg_dir(env, "XDG_DATA_HOME", ".local/share") + "/sessions" : home + "/sessions"};
  config.store = config.stores.front();
}

void settle_provider(Config& config) {
  if (config.provider == "deepseek") {
    if (config.model.empty()) config.model = kDeepSeekDefaultModel;
    if (config.base_url.empty()) config.base_url = kDeepSeekBaseUrl;
  } else if (config.provider == "echo" && config.model.empty()) {
    config.model = "echo";
  }
  if (config.provider == "openai" && config.base_url.empty())
    throw ConfigError("--provider openai needs --base-url (the server's OpenAI-compatible endpoint)");
  if (config.provider == "openai" && config.model.empty())
    throw ConfigError("--provider openai needs --model");
  if (config.context_window) config.context_windows[config.model] = *config.context_window;
  if (config.image_input) config.image_models.insert(config.model);
}

} // namespace

std::string cache_dir_of(const Environment& env) {
  std::string home = env_or(env, "DSH_ACP_HOME", "");
  return home.empty() ? xdg_dir(env, "XDG_CACHE_HOME", ".cache") : home + "/cache";
}

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

CliResult load_config(const std::vector<std::string>& args, const Environment& env) {
  CliResult result;
  CommandLine cl = parse_command_line(args, env);
  if (cl.action) {
    result.action = *cl.action;
    return result;
  }
  if (cl.setup) result.action = CliAction::setup;

  Config& config = result.config;
  std::string home = env_or(env, "DSH_ACP_HOME", "");
  std::optional<std::string>& config_path = cl.config_path;
  bool explicit_config = config_path.has_value() || !env_or(env, "DSH_ACP_CONFIG", "").empty();
  if (!config_path && !env_or(env, "DSH_ACP_CONFIG", "").empty())
    config_path = resolve_path(env_or(env, "DSH_ACP_CONFIG", ""), env, "", "environment DSH_ACP_CONFIG");
  std::string path = config_path.value_or(env_or(env, "DSH_ACP_CONFIG", home.empty() ? xdg_dir(env, "XDG_CONFIG_HOME", ".config") + "/config.json" : home + "/config.json"));
  auto from_file = read_config_file(path, config, explicit_config, env);
  apply_options(config, cl.from_flags, from_file, env);

  settle_stores(config, cl.stores, env, home);
  if (config.log_file.empty())
    config.log_file = home.empty() ? xdg_dir(env, "XDG_STATE_HOME", ".local/state") + "/dsh-acp.log" : home + "/dsh-acp.log";
  config.cache_dir = cache_dir_of(env);
  config.harness_home = harness_home_dir(env);
  config.harness_store = config.harness_home + "/sessions";  // the harness's own root (docs/store-format.md#project-layout-01)
  settle_provider(config);
  config.key_file = (home.empty() ? xdg_dir(env, "XDG_CONFIG_HOME", ".config") : home) + "/" + kKeyFileName;
  // The key --setup stored stands in for the environment's, before the config file's.
  if (std::string stored = read_key_file(config.key_file); !stored.empty()) config.deepseek_api_key = stored;
  config.deepseek_api_key = env_or(env, "DEEPSEEK_API_KEY", config.deepseek_api_key);
  config.openai_api_key = env_or(env, "OPENAI_API_KEY", config.openai_api_key);
  return result;
}

namespace {

const Config& defaults() {
  static const Config config;
  return config;
}

json::value default_of(const Option& opt) { return opt.get ? opt.get(defaults()) : json::value(nullptr); }

// JSON text as a person writes it: Boost.JSON prints 0.8 as 8E-1, std::to_chars as 0.8 (the shortest
// form that reads back the same).
std::string readable_json(const json::value& v) {
  if (v.is_double()) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
    return ec == std::errc() ? std::string(buf, end) : json::serialize(v);
  }
  if (const json::object* o = v.if_object()) {
    std::string out = "{";
    for (const auto& [key, member] : *o)
      out += (out.size() > 1 ? "," : "") + json::serialize(json::string(key)) + ":" + readable_json(member);
    return out + "}";
  }
  if (const json::array* a = v.if_array()) {
    std::string out = "[";
    for (const auto& item : *a) out += (out.size() > 1 ? "," : "") + readable_json(item);
    return out + "]";
  }
  return json::serialize(v);
}

std::string default_note(const Option& opt) {
  const json::value d = default_of(opt);
  if (d.is_null()) return {};
  return " (default " + (d.is_string() ? std::string(d.get_string()) : readable_json(d)) + ")";
}

json::object schema_of(const Option& opt) {
  json::object p;
  switch (opt.kind) {
  case Kind::choice: {
    json::array alts;
    for (const auto& c : opt.choices) alts.emplace_back(c);
    p["enum"] = std::move(alts);
    break;
  }
  case Kind::integer:
    p["type"] = "integer";
    p["minimum"] = opt.min;
    if (opt.max != std::numeric_limits<std::int64_t>::max()) p["maximum"] = opt.max;
    break;
  case Kind::fraction:
    p["type"] = "number";
    p["minimum"] = 0;
    p["maximum"] = 1;
    break;
  case Kind::boolean: p["type"] = "boolean"; break;
  case Kind::path:
  case Kind::string:
    p["type"] = "string";
    p["minLength"] = 1;
    break;
  }
  if (json::value d = default_of(opt); !d.is_null()) p["default"] = std::move(d);
  p["description"] = opt.note ? json::string(opt.note) : json::string(opt.help);
  return p;
}

// The keys only the file has: several roots, the model list and the API keys (never flags: a flag would
// show a key in `ps`).
std::vector<std::pair<std::string, json::value>> file_only_keys() {
  json::object window{{"type", "integer"}, {"minimum", 256}, {"maximum", std::int64_t(1) << 40}};
  json::object model_entry{{"type", "object"},
                           {"additionalProperties", false},
                           {"required", json::array{"name"}},
                           {"properties",
                            {{"name", {{"type", "string"}, {"minLength", 1}}},
                             {"contextWindow", window},
                             {"imageInput", {{"type", "boolean"},
                                             {"default", false},
                                             {"description", "the model takes images in prompts (openai provider)"}}}}}};
  return {
      {"stores",
       json::object{{"type", "array"},
                    {"minItems", 1},
                    {"items", {{"type", "string"}, {"minLength", 1}}},
                    {"description", "every session store root, listed together; new sessions go to the first "
                                    "(overrides \"store\"); paths as in \"store\""}}},
      {"models",
       json::object{{"type", "array"},
                    {"description", "extra model choices offered per session: a name, or {name, contextWindow, imageInput}"},
                    {"items", {{"oneOf", json::array{json::object{{"type", "string"}, {"minLength", 1}}, model_entry}}}}}},
      {"deepseekApiKey",
       json::object{{"type", "string"}, {"description", "used when DEEPSEEK_API_KEY is not set and --setup stored none"}}},
      {"openaiApiKey", json::object{{"type", "string"}, {"description", "used when OPENAI_API_KEY is not set"}}},
  };
}

} // namespace

std::string config_schema_text() {
  const auto quoted = [](std::string_view s) { return json::serialize(json::string(s)); };
  std::string out = "{\n";
  out += "  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n";
  out += "  \"$id\": \"https://dsh-acp.invalid/schemas/config.schema.json\",\n";
  out += "  \"title\": \"dsh-acp configuration file\",\n";
  out += "  \"description\": " +
         quoted("The JSON file read by `--config` (docs/configuration.md). Keys are the flags' camelCase names; a flag "
                "or DSH_ACP_<NAME> environment variable overrides the file. Unknown keys are an error. Written by "
                "`dsh-acp --print-config-schema` from the option table in src/support/config.cpp, which also writes "
                "--help; tests/unit/config_test.cpp checks this file is what it prints.") +
         ",\n";
  out += "  \"type\": \"object\",\n  \"additionalProperties\": false,\n  \"properties\": {\n";
  std::vector<std::pair<std::string, json::value>> rows;
  const auto file_only = file_only_keys();
  for (const auto& opt : options()) {
    rows.emplace_back(camel_case(opt.flag), schema_of(opt));
    if (std::string_view(opt.flag) == "store") rows.push_back(file_only.front());  // "stores" beside "store"
  }
  for (std::size_t i = 1; i < file_only.size(); ++i) rows.push_back(file_only[i]);
  for (std::size_t i = 0; i < rows.size(); ++i)
    out += "    " + quoted(rows[i].first) + ": " + readable_json(rows[i].second) + (i + 1 < rows.size() ? ",\n" : "\n");
  out += "  }\n}\n";
  return out;
}

bool takes_images(const Config& config, const std::string& model) {
  if (config.provider == "echo") return true;
  if (config.provider == "deepseek") return false;
  return config.image_models.count(model) > 0;
}

std::string usage_text() {
  std::string out =
      "Usage: dsh-acp [options]\n"
      "An Agent Client Protocol (ACP v1) agent on stdin/stdout. Editors start it with no arguments.\n"
      "Moving sessions between stores: dsh-acp store copy|verify|migrate (see dsh-acp store --help).\n\n"
      "Options (each also settable as DSH_ACP_<NAME> in the environment or as a camelCase key in the config file;\n"
      "precedence: flag > environment > config file > default):\n"
      "  --help                     print this help and exit\n"
      "  --version                  print the version and exit\n"
      "  --print-config-schema      print the config file's JSON Schema (every key, type, bound and default) and exit\n"
      "  --setup                    ask for the DeepSeek API key on the terminal and store it (mode 0600) in\n"
      "                             $DSH_ACP_HOME/deepseek-api-key, else $XDG_CONFIG_HOME/dsh-acp/deepseek-api-key;\n"
      "                             used when DEEPSEEK_API_KEY is not set\n"
      "  --config FILE              JSON config file (default $DSH_ACP_HOME/config.json, else\n"
      "                             $XDG_CONFIG_HOME/dsh-acp/config.json)\n";
  for (const auto& opt : options()) {
    std::string left = std::string("  --") + opt.flag;
    switch (opt.kind) {
    case Kind::integer: left += " N"; break;
    case Kind::fraction: left += " F"; break;
    case Kind::path: left += " PATH"; break;
    case Kind::string: left += " TEXT"; break;
    case Kind::boolean: break;
    case Kind::choice: {
      std::string alts;
      for (const auto& c : opt.choices) alts += (alts.empty() ? "" : "|") + c;
      left += " " + alts;
      break;
    }
    }
    if (left.size() < 29) left.resize(29, ' ');
    else left += "  ";
    out += left + opt.help + default_note(opt) + "\n";
  }
  out += "\nWhere things are (--config, --store and --log-file name other places):\n"
         "  DSH_ACP_HOME               when set, holds everything of ours: config.json, sessions/ (the store),\n"
         "                             dsh-acp.log and cache/ (the listing index)\n"
         "  otherwise                  $XDG_CONFIG_HOME/dsh-acp/config.json, $XDG_DATA_HOME/dsh-acp/sessions,\n"
         "                             $XDG_STATE_HOME/dsh-acp/dsh-acp.log, $XDG_CACHE_HOME/dsh-acp (XDG defaults:\n"
         "                             ~/.config, ~/.local/share, ~/.local/state, ~/.cache)\n"
         "  DSH_HOME                   the deepseek-harness home (default ~/.dsh): with no store named, its own\n"
         "                             root $DSH_HOME/sessions is listed too, read-only (name it with --store to write it)\n";
  out += "\nPATH values: a leading ~ is $HOME. A relative PATH in the config file is taken from the config file's\n"
         "directory; on the command line and in the environment, from the current directory.\n";
  out += "\nKeys: DEEPSEEK_API_KEY (deepseek; else the key file --setup stores), OPENAI_API_KEY (openai, optional for\n"
         "loopback), or the config-file keys deepseekApiKey / openaiApiKey. Exit codes: 0 after stdin EOF or\n"
         "SIGTERM/SIGINT/SIGHUP, 2 for usage or configuration errors, 1 for fatal runtime errors. Logs go to the log\n"
         "file, never to stdout.\n";
  return out;
}

} // namespace acp::support
