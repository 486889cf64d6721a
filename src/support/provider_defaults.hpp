// Defaults of the DeepSeek provider, in one place: the configuration fills them in and the
// provider applies them when it is built from a configuration that left them empty.
#pragma once

namespace acp::support {

inline constexpr const char* kDeepSeekBaseUrl = "https://api.deepseek.com";
inline constexpr const char* kDeepSeekDefaultModel = "deepseek-flash";

} // namespace acp::support
