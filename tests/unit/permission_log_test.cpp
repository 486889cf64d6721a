// "Always" choices in the log: the record's shape (ignorable, schemas/permission-rule.schema.json),
// and the round trip through a real store root of each generation back into a Permissions.
#include "../common/temp_dir.hpp"
#include "engine/permission_log.hpp"
#include "store/session_store.hpp"
#include "store/session_writer.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace acp::engine;
namespace json = boost::json;
namespace store = acp::store;

namespace {


std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<store::SessionStore> open_root(const std::string& root, store::Generation gen) {
  store::StoreOptions o;
  o.root = root;
  o.encoding = store::Encoding::none;  // plain lines: the test reads what was written
  o.generation = gen;
  return std::make_unique<store::SessionStore>(o);
}

store::SessionHeader header(const std::string& id) {
  store::SessionHeader h;
  h.id = id;
  h.cwd = "/work/project";
  h.createdAt = 1000;
  return h;
}

json::object parse_object(std::string_view text) { return json::parse(text).as_object(); }

} // namespace

BOOST_AUTO_TEST_SUITE(permission_log)

BOOST_AUTO_TEST_CASE(the_event_names_the_tool_the_prefix_or_command_and_the_decision) {
  auto bash = permission_rule_event(PermissionRule{"bash", "npm test", true});
  BOOST_TEST(bash.type == "dsh-acp/permission-rule");
  BOOST_TEST(bash.ignorable);
  BOOST_TEST(json::serialize(bash.data) == R"({"tool":"bash","commandPrefix":"npm test","decision":"allow"})");
  auto exact = permission_rule_event(*Permissions::rule_for("bash", " rm old.log "));
  BOOST_TEST(json::serialize(exact.data) == R"({"tool":"bash","command":"rm old.log","decision":"allow"})");
  auto edit = permission_rule_event(PermissionRule{"edit", "", false});
  BOOST_TEST(json::serialize(edit.data) == R"({"tool":"edit","decision":"reject"})");
  BOOST_TEST(!edit.surfaceOp);
}

BOOST_AUTO_TEST_CASE(restoring_applies_rules_only_and_the_latest_wins) {
  Permissions p;
  auto need = [&](std::string_view cmd) { return p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, cmd); };
  BOOST_TEST(!restore_permission_rule(parse_object(R"({"type":"turn/start","seq":1,"time":2,"data":{"turn":1}})"), p));
  BOOST_TEST(restore_permission_rule(
      parse_object(R"({"type":"dsh-acp/permission-rule","seq":2,"time":3,"data":{"tool":"bash","commandPrefix":"npm test","decision":"allow"}})"), p));
  BOOST_TEST((need("npm test --watch") == PermissionNeed::allowed));
  BOOST_TEST(restore_permission_rule(
      parse_object(R"({"type":"dsh-acp/permission-rule","seq":3,"time":4,"data":{"tool":"bash","commandPrefix":"npm test","decision":"reject"},"ignorable":true})"), p));
  BOOST_TEST((need("npm test --watch") == PermissionNeed::refused));
  // Malformed rules change nothing (a bash rule without a prefix would cover every command).
  for (std::string_view bad : {R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"edit","decision":"maybe"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"edit","commandPrefix":7,"decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"edit","commandPrefix":"x","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"edit","command":"x","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","command":"rm x","commandPrefix":"rm","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","command":"rm x; rm y","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","command":" rm x","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","command":"git status","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":{"tool":"bash","commandPrefix":"rm && x","decision":"allow"}})",
                               R"({"type":"dsh-acp/permission-rule","seq":4,"time":5,"data":"edit"})"})
    BOOST_TEST(!restore_permission_rule(parse_object(bad), p), bad);
  BOOST_TEST(p.rules().size() == 2u);
  BOOST_TEST((p.check(SessionMode::ask, "edit", ToolEffect::changes_files) == PermissionNeed::ask));
}

// A fork of someone else's session (store/fork_seed.hpp) copies their rules and mode with the history;
// its dsh-acp/fork event says they no longer apply, and a load or resume forgets them there. Rules
// and a mode logged after it are the fork owner's and apply.
BOOST_AUTO_TEST_CASE(a_fork_of_someone_elses_session_forgets_their_choices) {
  const char* const rule = R"({"type":"dsh-acp/permission-rule","seq":2,"time":3,"data":{"tool":"bash","commandPrefix":"npm test","decision":"allow"},"ignorable":true})";
  const char* const mode = R"({"type":"dsh-acp/mode","seq":3,"time":3,"data":{"mode":"auto"},"ignorable":true})";
  auto fork = [](bool inherits) {
    return parse_object(std::string(R"({"type":"dsh-acp/fork","seq":4,"time":5,"data":{"source":{"sessionId":"s"},"throughSeq":3,"seedLength":4,"inheritsChoices":)") +
                        (inherits ? "true" : "false") + "}," + R"("ignorable":true})");
  };
  auto need = [](const LoggedChoices& c) { return c.permissions.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "npm test"); };
  LoggedChoices own;
  for (const auto& e : {parse_object(rule), parse_object(mode), fork(true)}) own.observe(e);
  BOOST_TEST((need(own) == PermissionNeed::allowed));
  BOOST_TEST((own.mode == SessionMode::auto_approve));
  LoggedChoices others;
  for (const auto& e : {parse_object(rule), parse_object(mode), fork(false)}) others.observe(e);
  BOOST_TEST((need(others) == PermissionNeed::ask));
  BOOST_TEST(!others.mode.has_value());
  others.observe(parse_object(R"({"type":"dsh-acp/mode","seq":5,"time":6,"data":{"mode":"read-only"},"ignorable":true})"));
  BOOST_TEST((others.mode == SessionMode::read_only));
}

// The release before exact rules logged `commandPrefix` for any first word (and a plain second):
// `rm old.log` was logged as "rm", `bash build.sh` as "bash". Read today, such an allow covers only
// the command of exactly those words; a prefix still offered stays one; a reject keeps its breadth.
BOOST_AUTO_TEST_CASE(rules_of_the_previous_release_are_read_no_wider_than_today) {
  auto old_rule = [](std::string_view prefix, std::string_view decision) {
    return parse_object(R"({"type":"dsh-acp/permission-rule","seq":2,"time":3,"data":{"tool":"bash","commandPrefix":")" +
                        std::string(prefix) + R"(","decision":")" + std::string(decision) + R"("},"ignorable":true})");
  };
  Permissions p;
  auto need = [&](std::string_view cmd) { return p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, cmd); };
  for (std::string_view prefix : {"rm", "find", "bash", "./build.sh", "ctest", "git clean", "python3"})
    BOOST_TEST(restore_permission_rule(old_rule(prefix, "allow"), p), prefix);
  for (std::string_view cmd : {"rm -f important.txt", "rm old.log", "find . -name 'victim*' -delete", "bash -c 'rm -rf ~'",
                               "./build.sh --evil", "ctest -R x", "git clean -fdx", "python3 -c 'import os'"})
    BOOST_TEST((need(cmd) == PermissionNeed::ask), cmd);
  BOOST_TEST((need("rm") == PermissionNeed::allowed));
  BOOST_TEST((need("git clean") == PermissionNeed::allowed));
  BOOST_TEST(p.rules().front().command == "rm");
  BOOST_TEST(p.rules().front().command_prefix.empty());
  BOOST_TEST(restore_permission_rule(old_rule("git status", "allow"), p));
  BOOST_TEST((need("git status --short") == PermissionNeed::allowed));
  BOOST_TEST(restore_permission_rule(old_rule("curl", "reject"), p));
  BOOST_TEST((need("curl https://example.com") == PermissionNeed::refused));
  // What is written today reads back as written.
  Permissions q;
  for (std::string_view cmd : {"rm old.log", "git status -s"}) {
    auto e = permission_rule_event(*Permissions::rule_for("bash", cmd));
    json::object event{{"type", e.type}, {"seq", 1}, {"time", 1}, {"data", e.data}};
    BOOST_TEST(restore_permission_rule(event, q), cmd);
  }
  BOOST_TEST((q.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "rm old.log") == PermissionNeed::allowed));
  BOOST_TEST((q.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "rm -f important.txt") == PermissionNeed::ask));
  BOOST_TEST((q.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "git status") == PermissionNeed::allowed));
}

BOOST_AUTO_TEST_CASE(rules_round_trip_through_a_root_of_each_generation) {
  for (auto gen : {store::Generation::flat, store::Generation::project_dirs}) {
    acp::test::TempDir dir("dsh-permlog");
    std::string path;
    {
      auto s = open_root(dir.path() + "/root", gen);
      auto w = s->create(header("s1"));
      w.append({permission_rule_event({"bash", "npm test", true}), permission_rule_event({"edit", "", true}),
                permission_rule_event({"bash", "npm test", false})},
               true);
      path = w.path();
    }
    // The rule lines carry ignorable:true, last, after data (docs/store-format.md#normalised-events), in
    // both generations.
    std::istringstream lines(slurp(path));
    std::string line;
    int rule_lines = 0;
    while (std::getline(lines, line)) {
      if (line.find("dsh-acp/permission-rule") == std::string::npos) continue;
      ++rule_lines;
      json::object o = parse_object(line);
      BOOST_TEST(o.size() == 5u, line);
      BOOST_TEST((o.end() - 1)->key() == "ignorable", line);
      BOOST_TEST(o.at("ignorable") == json::value(true), line);
    }
    BOOST_TEST(rule_lines == 3);

    // Our reader delivers them; folded in order, the later bash rule wins.
    auto s = open_root(dir.path() + "/root", gen);
    Permissions p;
    int restored = 0;
    s->read_events("s1", [&](json::object&& e) { restored += restore_permission_rule(e, p); });
    BOOST_TEST(restored == 3);
    BOOST_TEST((p.check(SessionMode::ask, "bash", ToolEffect::runs_commands, "npm test") == PermissionNeed::refused));
    BOOST_TEST((p.check(SessionMode::ask, "edit", ToolEffect::changes_files) == PermissionNeed::allowed));
    BOOST_TEST((p.check(SessionMode::ask, "write", ToolEffect::changes_files) == PermissionNeed::ask));
  }
}

// schemas/permission-rule.schema.json documents the record; this keeps it and the writer in step
// (tests/e2e/modes.test.mjs validates the schema's examples with a JSON Schema validator).
BOOST_AUTO_TEST_CASE(the_schema_describes_what_is_written) {
  json::object schema = parse_object(slurp(std::string(DSH_SCHEMA_DIR) + "/permission-rule.schema.json"));
  const json::object& props = schema.at("properties").as_object();
  BOOST_TEST(props.at("type").at("const") == json::value("dsh-acp/permission-rule"));
  BOOST_TEST(props.at("ignorable").at("const") == json::value(true));
  const json::object& data_props = props.at("data").at("properties").as_object();
  for (const PermissionRule& rule : {PermissionRule{"bash", "git status", true}, PermissionRule{"write", "", false},
                                     PermissionRule{"bash", "", true, "rm old.log"}}) {
    auto e = permission_rule_event(rule);
    for (const auto& kv : e.data) BOOST_TEST(data_props.contains(kv.key()), kv.key());
    bool listed = false;
    for (const auto& v : data_props.at("decision").at("enum").as_array()) listed |= v == e.data.at("decision");
    BOOST_TEST(listed);
  }
  for (const auto& key : schema.at("required").as_array())
    BOOST_TEST((key == "type" || key == "seq" || key == "time" || key == "data" || key == "ignorable"));
}

BOOST_AUTO_TEST_SUITE_END()
