// Recognising a slash command in prompt text. Pure and dependency-free (its own TU, so the fuzz
// target for `/ref` parsing links it without the handler runtime).
//
// A command is `/word` at the start of the text (leading whitespace ignored) followed by
// whitespace or the end; the rest, trimmed, is its argument. `//…`, `/ …` and `/usr/bin…` are not
// commands: such text goes to the model as written, slash included.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace acp::handlers {

struct SlashCommand {
  std::string name;      ///< without the slash
  std::string argument;  ///< the rest of the text, trimmed
};

/// The command a prompt text invokes, if it starts with one we implement (`ref`, `compact`,
/// `share`, `unshare`).
std::optional<SlashCommand> parse_slash_command(std::string_view text);

/// The word of a `/word` the text starts with when it is no command we implement.
std::optional<std::string> unknown_slash_command(std::string_view text);

} // namespace acp::handlers
