#include "handlers/slash_command_text.hpp"

#include <array>

namespace acp::handlers {

namespace {

constexpr std::array<std::string_view, 4> kCommands = {"ref", "compact", "share", "unshare"};

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// `/word` followed by whitespace or the end: the word and the rest.
std::optional<SlashCommand> split(std::string_view text) {
  std::string_view t = trim(text);
  if (t.size() < 2 || t.front() != '/') return std::nullopt;
  std::size_t end = 1;
  while (end < t.size() && word_char(t[end])) ++end;
  if (end == 1 || (end < t.size() && !space(t[end]))) return std::nullopt;
  return SlashCommand{std::string(t.substr(1, end - 1)), std::string(trim(t.substr(end)))};
}

} // namespace

std::optional<SlashCommand> parse_slash_command(std::string_view text) {
  auto command = split(text);
  if (!command) return std::nullopt;
  for (auto known : kCommands)
    if (command->name == known) return command;
  return std::nullopt;
}

std::optional<std::string> unknown_slash_command(std::string_view text) {
  auto command = split(text);
  if (!command || parse_slash_command(text)) return std::nullopt;
  return command->name;
}

} // namespace acp::handlers
