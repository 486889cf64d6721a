#include "engine/command_rule.hpp"

#include "support/utf8.hpp"

#include <span>
#include <vector>

namespace acp::engine {

namespace {

// The programs whose "always" may be a prefix rule, each with the subcommands that may lead one.
// Any other command gets an exact rule, and that is the point of a closed list: programs that run
// other programs or delete are never named here, so allowing one command of theirs never covers a
// different one:
//   sh, bash, zsh, dash, python, python3, node, perl, ruby, ...   their arguments are programs
//   env, xargs, sudo, doas, nohup, timeout, nice, exec, eval, ... they run the rest of their line
//   find                                                          -exec, -execdir, -ok, -delete
//   rm, rmdir, dd, mv, cp, chmod, truncate, ...                   the file named is the whole effect
//   make                                                          variables on its line replace recipes
//   ./script, any path or quoted word                             whatever that file is today
// Within the listed tools, subcommands that run other programs or destroy work are left out too:
// git aliases (any unlisted word may be one, and `!cmd` aliases run shell commands), git clean, rm,
// reset, checkout, restore, stash (discard work), rebase (--exec), bisect (run), submodule
// (foreach), config (sets aliases and pagers), fetch, pull, push, clone (--upload-pack and
// --receive-pack name programs to run), grep (-O runs a pager); npm/pnpm/yarn run (the script's
// name is what was seen, not any script), exec, dlx, create, init and install (run packages' code
// fetched from a registry); cargo run and install; go run, generate and install. What stays still runs the project's own code (tests, build scripts, hooks)
// and takes any options (`go test -exec PROG`): docs/tools.md says so beside the option's name.
constexpr std::string_view kGit[] = {"status",   "log",       "diff", "show", "blame", "shortlog",
                                     "describe", "ls-files", "rev-parse", "add", "commit"};
constexpr std::string_view kPackageManager[] = {"test", "ls", "outdated"};  // npm, pnpm, yarn
constexpr std::string_view kCargo[] = {"build", "check", "test", "clippy", "fmt", "doc", "bench", "tree", "metadata"};
constexpr std::string_view kGo[] = {"build", "test", "vet", "fmt", "list"};

std::span<const std::string_view> prefix_subcommands(std::string_view program) {
  if (program == "git") return kGit;
  if (program == "npm" || program == "pnpm" || program == "yarn") return kPackageManager;
  if (program == "cargo") return kCargo;
  if (program == "go") return kGo;
  return {};
}

bool listed_subcommand(std::string_view program, std::string_view sub) {
  for (std::string_view s : prefix_subcommands(program))
    if (s == sub) return true;
  return false;
}

bool blank(char c) { return c == ' ' || c == '\t'; }

std::vector<std::string_view> words_of(std::string_view text, std::size_t at_most) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size() && words.size() < at_most) {
    while (i < text.size() && blank(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !blank(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// Characters that would make the option's name show something other than what runs: control
// characters, and formatting characters that are invisible or reorder the text around them.
bool hidden_or_control(char32_t c) {
  return (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f) || c == 0xad || c == 0x61c || c == 0x180e ||
         (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) ||
         c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f);
}

// Whether an "always" can state this command truthfully (see the header).
bool rememberable(std::string_view command) {
  if (command.empty() || command.size() > kMaxRememberedCommand) return false;
  // Shell control of any kind makes the command more than its words say.
  if (command.find_first_of(";&|<>`$()\\{}") != std::string_view::npos) return false;
  for (std::size_t i = 0; i < command.size();) {
    const support::DecodedCodePoint d = support::decode_utf8(command, i);
    if (!d.valid || hidden_or_control(d.cp)) return false;
    i += d.length;
  }
  return true;
}

// The same words name another file in another directory: `rm old.log` was seen for this one.
bool working_directory(std::string_view workdir) { return workdir.empty() || workdir == "." || workdir == "./"; }

} // namespace

std::string_view trimmed_command(std::string_view command) {
  std::size_t begin = 0, end = command.size();
  while (begin < end && blank(command[begin])) ++begin;
  while (end > begin && blank(command[end - 1])) --end;
  return command.substr(begin, end - begin);
}

bool offered_prefix(std::string_view words) {
  auto w = words_of(words, 3);
  return w.size() == 2 && std::string(w[0]) + " " + std::string(w[1]) == words && listed_subcommand(w[0], w[1]);
}

std::optional<CommandScope> command_scope(std::string_view command, std::string_view workdir) {
  const std::string_view text = trimmed_command(command);
  if (!rememberable(text)) return std::nullopt;
  auto w = words_of(text, 2);
  if (w.size() == 2 && listed_subcommand(w[0], w[1]))
    return CommandScope{true, std::string(w[0]) + " " + std::string(w[1])};
  if (!working_directory(workdir)) return std::nullopt;
  return CommandScope{false, std::string(text)};
}

bool scope_covers(const CommandScope& scope, std::string_view command, std::string_view workdir) {
  const std::string_view text = trimmed_command(command);
  if (!rememberable(text)) return false;
  if (!scope.prefix) return text == scope.text && working_directory(workdir);
  const auto want = words_of(scope.text, scope.text.size());
  const auto have = words_of(text, want.size());
  return !want.empty() && have == want;
}

} // namespace acp::engine
