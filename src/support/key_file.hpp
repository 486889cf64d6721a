// The DeepSeek API key `dsh-acp --setup` stores (docs/models.md): one line in a file of mode 0600
// in the config directory ($DSH_ACP_HOME, else $XDG_CONFIG_HOME/dsh-acp), read when
// DEEPSEEK_API_KEY is not set and removed by the ACP `logout` method. Like the key in the
// environment it stays in our memory only: it is never logged, never put in an environment, so no
// process we start inherits it (secrets.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace acp::support {

/// The key file's name inside the config directory.
inline constexpr const char* kKeyFileName = "deepseek-api-key";

/// `text` without the whitespace around it, when what is left can be an API key: 1 to 1024
/// printable ASCII characters without spaces (it goes into an HTTP header as it is); else nullopt.
std::optional<std::string> api_key_text(std::string_view text);

/// The key stored at `path`; "" when there is none (no file, unreadable, not a key).
std::string read_key_file(const std::string& path);

/// Stores `key` at `path` atomically (a temporary file of mode 0600, fsynced, renamed over it, the
/// directory fsynced); missing directories are made 0700. Throws std::system_error.
void write_key_file(const std::string& path, const std::string& key);

/// Removes the key file; true when there was one. Throws std::system_error when it cannot.
bool remove_key_file(const std::string& path);

} // namespace acp::support
