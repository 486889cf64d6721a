// What an "always" answer for one bash command remembers, and which commands that covers. The
// option's name states the rule, and the rule covers exactly what the name shows:
//   exact   ``Always allow `rm old.log` ``      that command, character for character (trimmed), run
//                                               in the session's working directory (no other workdir)
//   prefix  ``Always allow `git status …` ``    those two words followed by anything (options too)
// A prefix rule is only for a short list of development tools and their plain subcommands, where
// "these words, any arguments" is what a user means (command_rule.cpp lists them, with why the rest
// get exact rules: shells, interpreters, wrappers that run the rest of their line, deleters, ...).
// A command that "always" cannot state truthfully is asked for every time and never covered: shell
// control (`;`, `&&`, `|`, redirections, substitutions, line breaks), other control characters,
// invisible or bidirectional formatting characters, invalid UTF-8, or more than kMaxRememberedCommand
// bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace acp::engine {

inline constexpr std::size_t kMaxRememberedCommand = 1024;

struct CommandScope {
  bool prefix = false;  ///< false: exactly `text`
  std::string text;     ///< the command (trimmed), or the prefix's words joined by single spaces
};

/// The rule an "always" for `command` (run in `workdir`, "" for the working directory) creates;
/// nullopt when it is asked for every time.
std::optional<CommandScope> command_scope(std::string_view command, std::string_view workdir = {});

/// Whether `words` (single spaces between them) is a prefix that command_scope offers.
bool offered_prefix(std::string_view words);

/// Whether a rule covers `command` run in `workdir`: the command can be remembered at all and is
/// `scope.text` exactly, in the working directory (an exact rule), or starts with its words (a
/// prefix rule, any workdir).
bool scope_covers(const CommandScope& scope, std::string_view command, std::string_view workdir = {});

/// The command with its surrounding spaces and tabs removed (how exact rules compare).
std::string_view trimmed_command(std::string_view command);

} // namespace acp::engine
