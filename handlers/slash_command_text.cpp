#include "handlers/slash_command_text.hpp"

namespace acp::handlers {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

} // namespace

std::optional<SlashCommand> parse_slash_command(std::string_view text) {
  std::string_view t = trim(text);
  constexpr std::string_view kRef = "/ref";
  if (t.substr(0, kRef.size()) != kRef) return std::nullopt;
  std::string_view rest = t.substr(kRef.size());
  if (!rest.empty() && rest.front() != ' ' && rest.front() != '\t' && rest.front() != '\n') return std::nullopt;
  return SlashCommand{"ref", std::string(trim(rest))};
}

} // namespace acp::handlers
