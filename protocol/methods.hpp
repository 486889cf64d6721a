// ACP method names, in one place so the bindings table and tests agree.
#pragma once

#include <string_view>

namespace acp::methods {
inline constexpr std::string_view initialize = "initialize";
inline constexpr std::string_view authenticate = "authenticate";
inline constexpr std::string_view logout = "logout";
inline constexpr std::string_view session_new = "session/new";
inline constexpr std::string_view session_load = "session/load";
inline constexpr std::string_view session_list = "session/list";
inline constexpr std::string_view session_resume = "session/resume";
inline constexpr std::string_view session_fork = "session/fork";
inline constexpr std::string_view session_close = "session/close";
inline constexpr std::string_view session_delete = "session/delete";
inline constexpr std::string_view session_prompt = "session/prompt";
inline constexpr std::string_view session_cancel = "session/cancel";
inline constexpr std::string_view session_set_config_option = "session/set_config_option";
inline constexpr std::string_view session_set_mode = "session/set_mode";
inline constexpr std::string_view session_update = "session/update";
inline constexpr std::string_view dsh_session_reference_candidates = "_dsh/sessionReference/candidates";
// Agent → client.
inline constexpr std::string_view elicitation_create = "elicitation/create";
} // namespace acp::methods
