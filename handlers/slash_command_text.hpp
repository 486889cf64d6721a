// Recognising a slash command in prompt text. Pure and dependency-free (its own TU, so the fuzz
// target for `/ref` parsing links it without the handler runtime).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace acp::handlers {

struct SlashCommand {
  std::string name;      ///< without the slash
  std::string argument;  ///< the rest of the text, trimmed
};

/// The command a prompt text invokes, if it starts with one we implement.
std::optional<SlashCommand> parse_slash_command(std::string_view text);

} // namespace acp::handlers
