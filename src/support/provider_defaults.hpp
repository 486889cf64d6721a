// Defaults of the DeepSeek provider, in one place: the configuration fills them in and the
// provider applies them when it is built from a configuration that left them empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace acp::support {

inline constexpr const char* kDeepSeekBaseUrl = "https://api.deepseek.com";
inline constexpr const char* kDeepSeekDefaultModel = "deepseek-flash";

/// Published context windows (tokens) of DeepSeek's models, used when the configuration names none:
/// the current V4 models have 1M, the retired V3.2 aliases 128K. Other models have no known window.
inline std::optional<std::int64_t> published_context_window(std::string_view model) {
  if (model == "deepseek-flash" || model == "deepseek-v4-pro" || model == "deepseek-v4-flash") return 1000000;
  if (model == "deepseek-chat" || model == "deepseek-reasoner") return 131072;
  return std::nullopt;
}

} // namespace acp::support
