// Command line, environment and configuration file (docs/configuration.md).
//
// One table describes every option; the flag (--max-frame-bytes), the config-file key
// (maxFrameBytes) and the environment variable (DSH_ACP_MAX_FRAME_BYTES) are all derived from its
// name, so the three sources cannot drift apart. Precedence: flag > environment > file > default.
// Pure: the environment is passed in, nothing is read from the process here except files named.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace acp::support {

struct Config {
  std::string config_file;        ///< the file that was read ("" if none existed)
  std::string store;              ///< the first session store root (where new sessions go)
  std::vector<std::string> stores;  ///< every root, in order: --store (repeatable), DSH_ACP_STORE, "stores"/"store"
  bool stores_configured = false;   ///< a root was named; else the default root (and a discovered harness root)
  std::string harness_store;        ///< the harness's own root: $DSH_HOME/sessions, else ~/.dsh/sessions
  std::string store_compression;  ///< "zstd" | "none" | "" (keep the root's own, zstd for a new root)
  std::string store_generation;   ///< "45fc" | "0.1" | "" (the root's own; 0.1 for harness_store, else 45fc)
  std::string cache_dir;          ///< listing index location ($XDG_CACHE_HOME/dsh-acp)
  std::string harness_home;       ///< the harness's home ($DSH_HOME, else ~/.dsh): image attachments live there
  std::string provider = "deepseek";
  std::string model;
  std::string base_url;
  std::string ca_file;
  std::string system_prompt;      ///< file with {cwd} and {date} placeholders; "" = built in
  bool allow_insecure_http = false;
  std::int64_t connect_timeout_ms = 10000;
  std::int64_t idle_timeout_ms = 120000;
  std::int64_t request_timeout_ms = 600000;
  std::int64_t max_retries = 3;
  std::int64_t retry_base_ms = 500;
  std::int64_t echo_delay_ms = 0;
  std::int64_t max_references = 3;
  std::int64_t candidate_limit = 50;
  std::int64_t max_reference_bytes = 65536;
  std::int64_t max_frame_bytes = 67108864;
  std::int64_t max_outbox_bytes = 16777216;  ///< queued output before reading pauses and producers wait
  std::int64_t max_held_prompt_bytes = 268435456;  ///< prompt text all sessions' prompts hold together
  std::string log_file;
  std::string log_level = "info";
  std::vector<std::string> models;  ///< extra model choices offered per session (config file only)
  /// Context windows (tokens) of models: --context-window for the configured model, and the
  /// `contextWindow` of `models` entries written as objects {name, contextWindow}.
  std::map<std::string, std::int64_t> context_windows;
  std::optional<std::int64_t> context_window;  ///< --context-window (the configured model)
  /// Models of the openai provider that take images in prompts: --image-input for the configured
  /// model, `imageInput: true` on `models` entries (support::takes_images decides per provider).
  std::set<std::string> image_models;
  bool image_input = false;                    ///< --image-input (the configured model)
  double compact_at = 0.8;                     ///< share of the usable window that triggers compaction; 0 = off
  std::int64_t compact_keep_turns = 2;         ///< most recent user turns a compaction leaves alone
  std::int64_t max_steps = 64;                 ///< model requests per turn (tool loop); then max_turn_requests
  std::int64_t max_tool_result_bytes = 65536;  ///< a tool result longer than this is cut (head and tail kept)
  std::int64_t mcp_call_timeout_ms = 300000;   ///< an MCP tools/call not answered by then is cancelled
  std::int64_t lock_timeout_ms = 2000;         ///< another process's session lock waited for, then SESSION_BUSY
  std::string default_mode = "ask";            ///< the mode of a session whose log holds no choice: ask|read-only|auto
  std::string deepseek_api_key;     ///< DEEPSEEK_API_KEY, else the key file, else config-file key deepseekApiKey
  /// Where `--setup` stores the DeepSeek key (support/key_file.hpp): $DSH_ACP_HOME/deepseek-api-key,
  /// else $XDG_CONFIG_HOME/dsh-acp/deepseek-api-key.
  std::string key_file;
  std::string openai_api_key;       ///< OPENAI_API_KEY, else config-file key openaiApiKey

  bool operator==(const Config&) const = default;  // tests compare a default with the same set explicitly
};

/// Whether `model` of the configured provider takes images: the echo model does (it describes
/// them), DeepSeek's API takes none, an OpenAI-compatible model when the configuration says so.
bool takes_images(const Config& config, const std::string& model);

/// A usage or configuration error: the process prints it on stderr and exits with code 2.
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// setup: `--setup`, ask for the DeepSeek key on the terminal and store it (server/setup_command.hpp).
/// config_schema: `--print-config-schema`, print config_schema_text() and exit.
enum class CliAction { run, help, version, setup, config_schema };

struct CliResult {
  CliAction action = CliAction::run;
  Config config;
};

using Environment = std::map<std::string, std::string>;

/// Parses argv (without argv[0]), the environment and the config file. Throws ConfigError.
/// Store URLs are not checked here (acp_support cannot parse them): the server's load_config
/// (server/server_config.hpp) refuses one carrying a password.
CliResult load_config(const std::vector<std::string>& args, const Environment& env);

/// Where the listing and content indexes live: $DSH_ACP_HOME/cache, else $XDG_CACHE_HOME/dsh-acp
/// (~/.cache/dsh-acp). `dsh-acp store` uses the server's.
std::string cache_dir_of(const Environment& env);

/// The --help text.
std::string usage_text();

/// The config file's JSON Schema (schemas/config.schema.json), written from the same option table as
/// usage_text(): every key with its type, bounds, choices and default.
std::string config_schema_text();

/// Snapshot of the process environment.
Environment process_environment();

} // namespace acp::support
