// Session modes and "always" rules through the handlers: modes in the load/resume answers, the
// `mode` config option, session/set_mode and its errors, current_mode_update, and the rules and the
// mode of the log restored into the attached session by session/load and session/resume.
#include "handler_fixture.hpp"

#include "engine/permission_log.hpp"
#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"

#include <boost/test/unit_test.hpp>

using namespace engine_fixture;

namespace {

std::vector<std::string> mode_updates(const Wire& w) {
  std::vector<std::string> out;
  for (const auto* u : w.channel.updates<protocol::CurrentModeUpdate>()) out.push_back(u->currentModeId);
  return out;
}
std::size_t option_updates(const Wire& w) { return w.channel.updates<protocol::ConfigOptionUpdate>().size(); }

std::string option_value(const std::vector<protocol::SessionConfigOption>& options, std::string_view id) {
  for (const auto& o : options)
    if (o.id == id) return o.currentValue;
  return "(none)";
}

bool rpc_error_at(const jsonrpc::RpcError& e, std::string_view pointer) {
  return e.code() == -32602 && e.data() && e.data()->is_object() && e.data()->as_object().contains("path") &&
         e.data()->as_object().at("path") == json::value(pointer);
}

protocol::LoadSessionRequest load_request(const std::string& id, const std::string& cwd) {
  protocol::LoadSessionRequest r;
  r.sessionId = id;
  r.cwd = cwd;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(session_modes)

BOOST_FIXTURE_TEST_CASE(always_rules_in_the_log_survive_load_and_resume, Fixture) {
  auto a = process();
  const std::string cwd = root;
  const std::string id = run(a->engine.create_session(cwd, {}))->id;
  {
    auto w = a->store.get().primary().open(id);
    // The last as the release before exact rules logged an allowed `rm old.log`: prefix "rm".
    w.append({engine::permission_rule_event({"bash", "npm test", true}), engine::permission_rule_event({"edit", "", true}),
              engine::permission_rule_event({"bash", "npm test", false}), engine::permission_rule_event({"bash", "rm", true})},
             true);
  }
  auto check_rules = [](const engine::Session& s, const char* how) {
    BOOST_TEST_CONTEXT(how) BOOST_TEST(s.permissions.rules().size() == 4u);
    BOOST_TEST((s.permissions.check(engine::SessionMode::ask, "bash", engine::ToolEffect::runs_commands, "rm -f important.txt") ==
                engine::PermissionNeed::ask));
    BOOST_TEST((s.permissions.check(engine::SessionMode::ask, "bash", engine::ToolEffect::runs_commands, "npm test") ==
                engine::PermissionNeed::refused));
    BOOST_TEST((s.permissions.check(engine::SessionMode::ask, "edit", engine::ToolEffect::changes_files) ==
                engine::PermissionNeed::allowed));
  };

  auto b = process();
  Wire wb(*b, *this);
  auto loaded = run(handlers::session_load(wb.ctx, load_request(id, cwd)));
  auto session = b->engine.require(id);
  check_rules(*session, "load");
  BOOST_REQUIRE(loaded.modes);
  BOOST_TEST(loaded.modes->currentModeId == "ask");
  BOOST_TEST(loaded.modes->availableModes.size() == 3u);
  BOOST_REQUIRE(loaded.configOptions);
  BOOST_TEST(option_value(*loaded.configOptions, "mode") == "ask");
  BOOST_TEST(option_value(*loaded.configOptions, "model") == "m1");
  BOOST_TEST(loaded.configOptions->back().category.value_or("") == "mode");

  // A session already attached keeps its in-memory state: its mode and its rules.
  session->mode = engine::SessionMode::auto_approve;
  session->permissions.remember("write", "", false);
  auto again = run(handlers::session_resume(wb.ctx, load_request(id, cwd)));
  BOOST_TEST(again.modes->currentModeId == "auto");
  BOOST_TEST(session->permissions.rules().size() == 5u);

  // Another process resumes it (no replay): the rules are back; the mode set above in memory only
  // (never chosen through set_mode, so never logged) starts at the default.
  auto c = process();
  Wire wc(*c, *this);
  auto resumed = run(handlers::session_resume(wc.ctx, load_request(id, cwd)));
  BOOST_TEST(wc.channel.replayed.empty(), "resume replays nothing");
  check_rules(*c->engine.require(id), "resume");
  BOOST_TEST(resumed.modes->currentModeId == "ask");
  BOOST_TEST(option_value(*resumed.configOptions, "mode") == "ask");
}

BOOST_FIXTURE_TEST_CASE(set_mode_and_the_mode_option_switch_and_announce_it, Fixture) {
  auto a = process();
  Wire w(*a, *this);
  auto session = run(a->engine.create_session(root, {}));
  const std::string id = session->id;

  run(handlers::session_set_mode(w.ctx, protocol::SetSessionModeRequest{id, "read-only", {}}));
  BOOST_TEST((session->mode == engine::SessionMode::read_only));
  BOOST_TEST(mode_updates(w) == std::vector<std::string>{"read-only"});
  BOOST_TEST(option_updates(w) == 1u, "set_mode also tells clients that show only config options");
  // The same mode again: nothing changes, nothing is sent.
  run(handlers::session_set_mode(w.ctx, protocol::SetSessionModeRequest{id, "read-only", {}}));
  BOOST_TEST(w.channel.notes.size() == 2u);

  protocol::SetSessionConfigOptionRequest set{id, "mode", json::value("auto"), std::nullopt, {}};
  auto answer = run(handlers::session_set_config_option(w.ctx, set));
  BOOST_TEST((session->mode == engine::SessionMode::auto_approve));
  BOOST_TEST(option_value(answer.configOptions, "mode") == "auto");
  BOOST_TEST(option_value(answer.configOptions, "model") == "m1", "the model option is still there");
  BOOST_TEST((mode_updates(w) == std::vector<std::string>{"read-only", "auto"}));
  BOOST_TEST(option_updates(w) == 1u, "the answer carries the options");

  // Errors: the mode is unchanged after each.
  BOOST_CHECK_EXCEPTION(run(handlers::session_set_mode(w.ctx, protocol::SetSessionModeRequest{id, "yolo", {}})),
                        jsonrpc::RpcError, [](const jsonrpc::RpcError& e) { return rpc_error_at(e, "/modeId"); });
  BOOST_CHECK_EXCEPTION(run(handlers::session_set_mode(w.ctx, protocol::SetSessionModeRequest{id, "", {}})),
                        jsonrpc::RpcError, [](const jsonrpc::RpcError& e) { return rpc_error_at(e, "/modeId"); });
  BOOST_CHECK_THROW(run(handlers::session_set_mode(w.ctx, protocol::SetSessionModeRequest{"no-such", "ask", {}})),
                    engine::SessionNotFound);
  for (json::value bad : {json::value("yolo"), json::value(true), json::value(3), json::value(nullptr)}) {
    protocol::SetSessionConfigOptionRequest r{id, "mode", bad, std::nullopt, {}};
    BOOST_CHECK_EXCEPTION(run(handlers::session_set_config_option(w.ctx, r)), jsonrpc::RpcError,
                          [](const jsonrpc::RpcError& e) { return rpc_error_at(e, "/value"); });
  }
  protocol::SetSessionConfigOptionRequest boolean{id, "mode", json::value("ask"), std::string("boolean"), {}};
  BOOST_CHECK_EXCEPTION(run(handlers::session_set_config_option(w.ctx, boolean)), jsonrpc::RpcError,
                        [](const jsonrpc::RpcError& e) { return rpc_error_at(e, "/value"); });
  protocol::SetSessionConfigOptionRequest unknown{id, "effort", json::value("high"), std::nullopt, {}};
  BOOST_CHECK_EXCEPTION(run(handlers::session_set_config_option(w.ctx, unknown)), jsonrpc::RpcError,
                        [](const jsonrpc::RpcError& e) { return rpc_error_at(e, "/configId"); });
  BOOST_TEST((session->mode == engine::SessionMode::auto_approve));
  BOOST_TEST(w.channel.notes.size() == 3u);
}

// acpx resumes from a new process for every command: a mode chosen in one process must come back in the next.
BOOST_FIXTURE_TEST_CASE(a_chosen_mode_is_logged_and_comes_back_in_other_processes, Fixture) {
  auto a = process();
  Wire wa(*a, *this);
  const std::string id =
      run(handlers::session_new(wa.ctx, protocol::NewSessionRequest{root, json::array{}, std::nullopt, {}})).sessionId;
  BOOST_TEST(events(*a, id).empty(), "the default is not logged");
  run(handlers::session_set_mode(wa.ctx, protocol::SetSessionModeRequest{id, "auto", {}}));
  auto logged = events(*a, id);
  BOOST_REQUIRE_EQUAL(logged.size(), 1u);
  BOOST_TEST(json::serialize(logged[0].at("type")) == R"("dsh-acp/mode")");
  BOOST_TEST(json::serialize(logged[0].at("data")) == R"({"mode":"auto"})");
  BOOST_TEST(logged[0].at("ignorable") == json::value(true));
  run(handlers::session_set_mode(wa.ctx, protocol::SetSessionModeRequest{id, "auto", {}}));
  BOOST_TEST(events(*a, id).size() == 1u, "the same mode again writes nothing");
  // A prompt after it: the mode event is no part of the conversation.
  Recorder r;
  BOOST_TEST((run(a->engine.prompt(id, {"hi", {}}, r)) == llm::StopKind::end_turn));
  BOOST_REQUIRE_EQUAL(provider.requests.size(), 1u);
  BOOST_TEST(provider.requests[0].messages.size() == 2u);  // the system prompt and "hi"

  // Another process loads it in the logged mode, whatever its own default.
  config.default_mode = "read-only";
  auto b = process();
  Wire wb(*b, *this);
  auto loaded = run(handlers::session_load(wb.ctx, load_request(id, root)));
  BOOST_TEST(loaded.modes->currentModeId == "auto");
  BOOST_TEST(option_value(*loaded.configOptions, "mode") == "auto");
  BOOST_TEST((b->engine.require(id)->mode == engine::SessionMode::auto_approve));
  // Chosen there through the mode option, it comes back on resume in a third.
  protocol::SetSessionConfigOptionRequest set{id, "mode", json::value("ask"), std::nullopt, {}};
  run(handlers::session_set_config_option(wb.ctx, set));
  auto c = process();
  Wire wc(*c, *this);
  auto resumed = run(handlers::session_resume(wc.ctx, load_request(id, root)));
  BOOST_TEST(resumed.modes->currentModeId == "ask");
  BOOST_TEST((c->engine.require(id)->mode == engine::SessionMode::ask));

  // A session that never chose a mode starts in the default: new, loaded and resumed.
  const std::string plain = run(a->engine.create_session(root, {}))->id;
  auto d = process();
  Wire wd(*d, *this);
  BOOST_TEST(run(handlers::session_resume(wd.ctx, load_request(plain, root))).modes->currentModeId == "read-only");
  BOOST_TEST(run(handlers::session_load(wc.ctx, load_request(plain, root))).modes->currentModeId == "read-only");
  auto fresh = run(handlers::session_new(wd.ctx, protocol::NewSessionRequest{root, json::array{}, std::nullopt, {}}));
  BOOST_TEST(fresh.modes->currentModeId == "read-only");
  BOOST_TEST(events(*d, plain).empty());
}

BOOST_AUTO_TEST_SUITE_END()
