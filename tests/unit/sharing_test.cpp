// People and sharing on the ACP side (issue 17), over the Backend seam: /share and /unshare, the
// `shared` config option, whose a listed session is (`_meta`), someone else's shared session loaded
// read-only, and sessions the person cannot see answering as ones that do not exist. A store with
// people is played by PeopleStore: a real file root for the logs, owners and shared flags in memory
// as a PostgreSQL store's sessions table keeps them. A plain file root cannot share.
#include "handler_fixture.hpp"

#include "handlers/handlers.hpp"
#include "handlers/router.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/mentions.hpp"
#include "store/errors.hpp"
#include "store/session_writer.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <mutex>

using namespace engine_fixture;

namespace {

// Owners and shared flags of every session, seen by every "process" (one database).
struct Directory {
  struct Row {
    std::string owner;
    bool shared = false;
  };
  std::mutex mutex;
  std::map<std::string, Row> rows;
  int set_shared_calls = 0;

  std::optional<Row> row(const std::string& id) {
    std::lock_guard lock(mutex);
    auto it = rows.find(id);
    if (it == rows.end()) return std::nullopt;
    return it->second;
  }
  void set(const std::string& id, Row r) {
    std::lock_guard lock(mutex);
    rows[id] = std::move(r);
  }
};

// A store with people: `person` sees its own sessions and those shared, writes only its own.
class PeopleStore final : public store::Backend {
public:
  PeopleStore(std::unique_ptr<store::SessionStore> files, std::shared_ptr<Directory> directory, std::string person)
      : files_(std::move(files)), directory_(std::move(directory)), person_(std::move(person)) {}

  const std::string& name() const noexcept override { return files_->name(); }
  store::Generation generation() const noexcept override { return files_->generation(); }
  bool read_only() const noexcept override { return false; }
  bool supports_sharing() const noexcept override { return true; }
  std::optional<std::string> person() const override { return person_; }

  std::optional<std::string> find_log(const std::string& id) override {
    if (!visible(id)) return std::nullopt;
    return files_->find_log(id);
  }
  store::StreamResult read_events(const std::string& id, const store::EventSink& sink, std::stop_token stop,
                                  store::EventLifetime lifetime) override {
    require_visible(id);
    return files_->read_events(id, sink, std::move(stop), lifetime);
  }
  std::vector<store::SessionListing> list_sessions(const store::ListQuery& query) override {
    std::vector<store::SessionListing> out;
    for (auto& row : files_->list_sessions(query)) {
      auto r = directory_->row(row.header.id);
      if (!r || (r->owner != person_ && !r->shared)) continue;
      row.owner = r->owner;
      row.shared = r->shared;
      out.push_back(std::move(row));
    }
    return out;
  }
  store::SessionWriter create(const store::SessionHeader& header, const store::LockWait& wait) override {
    store::SessionWriter writer = files_->create(header, wait);
    directory_->set(header.id, {person_, false});
    return writer;
  }
  store::SessionWriter open(const std::string& id, const store::LockWait& wait) override {
    require_own(id);
    return files_->open(id, wait);
  }
  void delete_session(const std::string& id, const store::LockWait& wait) override {
    require_own(id);
    files_->delete_session(id, wait);
  }
  void set_shared(const std::string& id, bool shared) override {
    require_own(id);
    std::lock_guard lock(directory_->mutex);
    directory_->rows[id].shared = shared;
    ++directory_->set_shared_calls;
  }

private:
  bool visible(const std::string& id) {
    auto r = directory_->row(id);
    return r && (r->owner == person_ || r->shared);
  }
  void require_visible(const std::string& id) {
    if (!visible(id)) throw store::SessionNotFound(id);
  }
  void require_own(const std::string& id) {
    require_visible(id);
    if (auto r = directory_->row(id); r->owner != person_)
      throw store::SessionReadOnly(id, "it belongs to " + r->owner);
  }

  std::unique_ptr<store::SessionStore> files_;
  std::shared_ptr<Directory> directory_;
  std::string person_;
};

// One person's server process over the shared root and directory.
struct PersonProcess {
  PersonProcess(Fixture& f, std::shared_ptr<Directory> directory, const std::string& person)
      : store([&f, directory, person] {
          store::StoreOptions o;
          o.root = f.root + "/store";
          o.cache_dir = f.root + "/cache-" + person;
          o.encoding = store::Encoding::none;
          o.default_generation = f.generation;
          std::vector<std::unique_ptr<store::Backend>> roots;
          roots.push_back(std::make_unique<PeopleStore>(std::make_unique<store::SessionStore>(o), directory, person));
          return std::make_unique<store::StoreSet>(std::move(roots));
        }),
        references(std::make_shared<handlers::StoreSessionSource>(store), refs::Config{}),
        engine(engine::EngineServices{f.config, f.provider, store, references, "system {cwd}"}, f.io.get_executor(),
               f.pool.get_executor()) {}
  engine::StoreHandle store;
  refs::SessionReferenceService references;
  engine::Engine engine;
};

// What a Wire's client was told: notifications so far, replayed frames, agent text, `shared`
// values and commands of the notifications from `from` on.
std::size_t sent(const Wire& w) { return w.channel.notes.size(); }
std::string replayed(const Wire& w) {
  std::string out;
  for (const auto& f : w.channel.replayed) out += f;
  return out;
}
std::string said(const Wire& w, std::size_t from = 0) {
  std::string out;
  for (const auto* c : w.channel.updates<protocol::AgentMessageChunk>(from))
    if (auto* t = std::get_if<protocol::TextContent>(&c->content)) out += t->text;
  return out;
}
std::vector<std::string> shared_updates(const Wire& w, std::size_t from = 0) {
  std::vector<std::string> out;
  for (const auto* u : w.channel.updates<protocol::ConfigOptionUpdate>(from))
    for (const auto& o : u->configOptions)
      if (o.id == "shared") out.push_back(o.currentValue);
  return out;
}
std::vector<std::string> commands_of(const Wire& w) {
  std::vector<std::string> out;
  for (const auto* u : w.channel.updates<protocol::AvailableCommandsUpdate>())
    for (const auto& c : u->availableCommands) out.push_back(c.name);
  return out;
}

protocol::PromptRequest prompt(const std::string& id, const std::string& text) {
  return protocol::PromptRequest{id, {protocol::TextContent{text, {}, {}}}, {}};
}

protocol::LoadSessionRequest load_request(const std::string& id, const std::string& cwd) {
  protocol::LoadSessionRequest r;
  r.sessionId = id;
  r.cwd = cwd;
  return r;
}

std::string option_value(const std::vector<protocol::SessionConfigOption>& options, std::string_view id) {
  for (const auto& o : options)
    if (o.id == id) return o.currentValue;
  return "(none)";
}

// What the client would get for the failure of `work`.
template <class W> jsonrpc::RpcError rpc_error_of(W&& work) {
  try {
    work();
  } catch (...) {
    return handlers::to_rpc_error(std::current_exception());
  }
  BOOST_FAIL("expected a failure");
  return jsonrpc::internal("unreachable");
}

std::string data_of(const jsonrpc::RpcError& e) { return e.data() ? json::serialize(*e.data()) : "none"; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sharing)

BOOST_FIXTURE_TEST_CASE(share_and_unshare_commands_and_the_shared_option_round_trip, Fixture) {
  auto directory = std::make_shared<Directory>();
  PersonProcess alice(*this, directory, "alice");
  Wire w(alice.engine, *this);
  auto created = run(handlers::session_new(w.ctx, protocol::NewSessionRequest{root, json::array{}, std::nullopt, {}}));
  const std::string id = created.sessionId;
  BOOST_REQUIRE(created.configOptions);
  BOOST_TEST(option_value(*created.configOptions, "shared") == "off");
  auto commands = commands_of(w);
  BOOST_TEST((std::find(commands.begin(), commands.end(), "share") != commands.end()));
  BOOST_TEST((std::find(commands.begin(), commands.end(), "unshare") != commands.end()));

  std::size_t from = sent(w);
  auto answer = run(handlers::session_prompt(w.ctx, prompt(id, "/share")));
  BOOST_TEST((answer.stopReason == protocol::StopReason::end_turn));
  BOOST_TEST(said(w, from) == "Shared: people with access to this store can now see and reference this session.");
  BOOST_TEST(directory->row(id)->shared);
  BOOST_TEST(shared_updates(w, from) == std::vector<std::string>{"on"});
  BOOST_TEST(provider.requests.empty(), "commands never reach the model");
  BOOST_TEST(events(*process(), id).empty(), "sharing writes no log record");

  from = sent(w);
  run(handlers::session_prompt(w.ctx, prompt(id, "  /unshare  ")));
  BOOST_TEST(said(w, from) == "No longer shared.");
  BOOST_TEST(!directory->row(id)->shared);
  BOOST_TEST(shared_updates(w, from) == std::vector<std::string>{"off"});

  // The option: "on"/"off", or a boolean with type "boolean"; the answer carries the new value.
  protocol::SetSessionConfigOptionRequest on{id, "shared", json::value("on"), std::nullopt, {}};
  auto set = run(handlers::session_set_config_option(w.ctx, on));
  BOOST_TEST(option_value(set.configOptions, "shared") == "on");
  BOOST_TEST(directory->row(id)->shared);
  protocol::SetSessionConfigOptionRequest off{id, "shared", json::value(false), std::string("boolean"), {}};
  set = run(handlers::session_set_config_option(w.ctx, off));
  BOOST_TEST(option_value(set.configOptions, "shared") == "off");
  BOOST_TEST(!directory->row(id)->shared);
  BOOST_TEST(directory->set_shared_calls == 4);
  for (json::value bad : {json::value("yes"), json::value(true), json::value(1)}) {
    protocol::SetSessionConfigOptionRequest r{id, "shared", bad, std::nullopt, {}};
    auto e = rpc_error_of([&] { run(handlers::session_set_config_option(w.ctx, r)); });
    BOOST_TEST(e.code() == -32602);
    BOOST_TEST(data_of(e) == R"({"path":"/value"})");
  }
  BOOST_TEST(directory->set_shared_calls == 4, "a bad value changes nothing");

  // Another process of alice's loads it with the state the store keeps.
  run(handlers::session_prompt(w.ctx, prompt(id, "/share")));
  PersonProcess again(*this, directory, "alice");
  Wire w2(again.engine, *this);
  auto loaded = run(handlers::session_load(w2.ctx, load_request(id, root)));
  BOOST_TEST(option_value(*loaded.configOptions, "shared") == "on");
}

BOOST_FIXTURE_TEST_CASE(share_on_a_file_store_says_it_cannot_and_the_turn_ends_normally, Fixture) {
  auto p = process();
  Wire w(p->engine, *this);
  auto created = run(handlers::session_new(w.ctx, protocol::NewSessionRequest{root, json::array{}, std::nullopt, {}}));
  const std::string id = created.sessionId;
  BOOST_TEST(option_value(*created.configOptions, "shared") == "(none)", "no shared option where the store cannot share");
  // Nor the commands: a client shows what is advertised, and these could only answer "cannot".
  BOOST_TEST(commands_of(w) == (std::vector<std::string>{"compact", "ref"}));

  auto answer = run(handlers::session_prompt(w.ctx, prompt(id, "/share")));
  BOOST_TEST((answer.stopReason == protocol::StopReason::end_turn));
  BOOST_TEST(said(w) == "Cannot share this session: sharing needs a PostgreSQL store; " + root +
                             "/store is one person's files.");
  std::size_t from = sent(w);
  answer = run(handlers::session_prompt(w.ctx, prompt(id, "/unshare")));
  BOOST_TEST((answer.stopReason == protocol::StopReason::end_turn));
  BOOST_TEST(said(w, from).starts_with("Cannot unshare this session: sharing needs a PostgreSQL store; "));
  BOOST_TEST(shared_updates(w).empty());
  BOOST_TEST(provider.requests.empty());
  BOOST_TEST(events(*p, id).empty(), "nothing written");

  protocol::SetSessionConfigOptionRequest on{id, "shared", json::value("on"), std::nullopt, {}};
  auto e = rpc_error_of([&] { run(handlers::session_set_config_option(w.ctx, on)); });
  BOOST_TEST(e.code() == -32602);
  BOOST_TEST(data_of(e) == R"({"path":"/configId"})");

  // A file root's listing has no owners.
  auto listed = run(handlers::session_list(w.ctx, protocol::ListSessionsRequest{}));
  BOOST_REQUIRE_EQUAL(listed.sessions.size(), 1u);
  BOOST_TEST(!listed.sessions[0]._meta->contains("dsh-acp/owner"));
  BOOST_TEST(!listed.sessions[0]._meta->contains("dsh-acp/shared"));
  BOOST_TEST(!listed.sessions[0]._meta->contains("dsh-acp/readOnly"), "the user's own root takes writes");
}

BOOST_FIXTURE_TEST_CASE(list_rows_say_whose_a_session_is_and_hide_what_the_person_cannot_see, Fixture) {
  auto directory = std::make_shared<Directory>();
  PersonProcess alice(*this, directory, "alice");
  PersonProcess bob(*this, directory, "bob");
  const std::string mine = run(alice.engine.create_session(root, {}))->id;
  const std::string shared = run(bob.engine.create_session(root, {}))->id;
  const std::string hidden = run(bob.engine.create_session(root, {}))->id;
  BOOST_TEST(!run(bob.engine.set_shared(shared, true)));

  Wire w(alice.engine, *this);
  auto listed = run(handlers::session_list(w.ctx, protocol::ListSessionsRequest{}));
  std::map<std::string, json::object> meta;
  for (const auto& s : listed.sessions) meta[s.sessionId] = *s._meta;
  BOOST_TEST(meta.size() == 2u);
  BOOST_TEST(!meta.contains(hidden), "an unshared session of bob's is not listed");
  BOOST_TEST(meta[mine].at("dsh-acp/owner") == json::value("alice"));
  BOOST_TEST(meta[mine].at("dsh-acp/shared") == json::value(false));
  BOOST_TEST(meta[shared].at("dsh-acp/owner") == json::value("bob"));
  BOOST_TEST(meta[shared].at("dsh-acp/shared") == json::value(true));
  BOOST_TEST(meta[shared].contains("deepseek-harness/sessionReference"));
  // Someone else's session takes no prompt here: the listing says so before one fails.
  BOOST_TEST(meta[shared].at("dsh-acp/readOnly") == json::value(true));
  BOOST_TEST(!meta[mine].contains("dsh-acp/readOnly"));
}

BOOST_FIXTURE_TEST_CASE(someone_elses_shared_session_loads_read_only_and_prompts_answer_invalid_params, Fixture) {
  auto directory = std::make_shared<Directory>();
  PersonProcess bob(*this, directory, "bob");
  Wire wb(bob.engine, *this);
  const std::string id = run(bob.engine.create_session(root, {}))->id;
  run(handlers::session_prompt(wb.ctx, prompt(id, "bob's question")));
  run(handlers::session_prompt(wb.ctx, prompt(id, "/share")));
  const std::size_t logged = events(*process(), id).size();
  BOOST_REQUIRE(logged > 0u);
  const std::size_t requests = provider.requests.size();

  PersonProcess alice(*this, directory, "alice");
  Wire w(alice.engine, *this);
  auto loaded = run(handlers::session_load(w.ctx, load_request(id, root)));
  BOOST_TEST(replayed(w).find("bob's question") != std::string::npos, "the history is replayed");
  BOOST_TEST(option_value(*loaded.configOptions, "shared") == "(none)", "not hers to share");
  BOOST_TEST(commands_of(w) == (std::vector<std::string>{"compact", "ref"}), "nor /share and /unshare");

  const std::string refusal = "Invalid params: /sessionId: session " + id + " belongs to bob and is read-only here";
  for (const char* text : {"a question of alice's", "/compact", "/share", "/unshare"}) {
    BOOST_TEST_CONTEXT(text) {
      const std::size_t from = sent(w);
      auto e = rpc_error_of([&] { run(handlers::session_prompt(w.ctx, prompt(id, text))); });
      BOOST_TEST(e.code() == -32602);
      BOOST_TEST(e.message() == refusal);
      BOOST_TEST(data_of(e) == R"({"path":"/sessionId"})");
      BOOST_TEST(sent(w) == from, "nothing sent before the refusal");
    }
  }
  // The mention of another session is not even prepared: refused before anything is read.
  const std::string other = run(alice.engine.create_session(root, {}))->id;
  auto e = rpc_error_of([&] {
    run(handlers::session_prompt(w.ctx, prompt(id, "see " + refs::format_mention({other, "other"}))));
  });
  BOOST_TEST(e.message() == refusal);
  protocol::SetSessionConfigOptionRequest on{id, "shared", json::value("off"), std::nullopt, {}};
  e = rpc_error_of([&] { run(handlers::session_set_config_option(w.ctx, on)); });
  BOOST_TEST(e.message() == refusal);
  e = rpc_error_of([&] { run(handlers::session_delete(w.ctx, protocol::SessionIdRequest{id, {}})); });
  BOOST_TEST(e.message() == refusal);
  BOOST_TEST(events(*process(), id).size() == logged, "nothing written");
  BOOST_TEST(provider.requests.size() == requests, "no model request");
  BOOST_TEST(directory->row(id)->shared);

  // Reading commands still answer in it.
  const std::size_t from = sent(w);
  auto answer = run(handlers::session_prompt(w.ctx, prompt(id, "/ref")));
  BOOST_TEST((answer.stopReason == protocol::StopReason::end_turn));
  BOOST_TEST(said(w, from).find(other) != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(sessions_the_person_cannot_see_answer_as_sessions_that_do_not_exist, Fixture) {
  auto directory = std::make_shared<Directory>();
  PersonProcess bob(*this, directory, "bob");
  Wire wb(bob.engine, *this);
  const std::string hidden = run(bob.engine.create_session(root, {}))->id;
  run(handlers::session_prompt(wb.ctx, prompt(hidden, "bob's private notes")));
  const std::string missing = "6d1c0a54-0000-4000-8000-000000000000";

  PersonProcess alice(*this, directory, "alice");
  Wire w(alice.engine, *this);
  const std::string id = run(alice.engine.create_session(root, {}))->id;
  // The same error, the id aside, for a mention of either.
  auto mention_error = [&](const std::string& target) {
    auto e = rpc_error_of([&] {
      run(handlers::session_prompt(w.ctx, prompt(id, "see " + refs::format_mention({target, "x"}))));
    });
    return std::to_string(e.code()) + " " + replace_all(e.message(), target, "<id>") + " " +
           replace_all(data_of(e), target, "<id>");
  };
  const std::string for_missing = mention_error(missing);
  BOOST_TEST(for_missing.find("does not exist") != std::string::npos);
  BOOST_TEST(mention_error(hidden) == for_missing);
  // Load and resume: not found, as for an id nobody has.
  auto as_missing = [&](auto call) {
    auto a = rpc_error_of([&] { call(hidden); });
    auto b = rpc_error_of([&] { call(missing); });
    BOOST_TEST(a.code() == b.code());
    BOOST_TEST(replace_all(a.message(), hidden, "<id>") == replace_all(b.message(), missing, "<id>"));
    BOOST_TEST(replace_all(data_of(a), hidden, "<id>") == replace_all(data_of(b), missing, "<id>"));
  };
  as_missing([&](const std::string& s) { run(handlers::session_load(w.ctx, load_request(s, root))); });
  as_missing([&](const std::string& s) { run(handlers::session_resume(w.ctx, load_request(s, root))); });
  // Delete: `{}` for both, as for an id nobody has, and bob's session is left as it was.
  const std::size_t bobs_events = events(*process(), hidden).size();
  BOOST_CHECK_NO_THROW(run(handlers::session_delete(w.ctx, protocol::SessionIdRequest{hidden, {}})));
  BOOST_CHECK_NO_THROW(run(handlers::session_delete(w.ctx, protocol::SessionIdRequest{missing, {}})));
  BOOST_TEST(events(*process(), hidden).size() == bobs_events, "the hidden session is untouched");
  BOOST_TEST(directory->row(hidden).has_value(), "and still stored");
  auto candidates = run(handlers::session_prompt(w.ctx, prompt(id, "/ref")));
  (void)candidates;
  BOOST_TEST(said(w).find(hidden) == std::string::npos, "/ref does not offer it");
  BOOST_TEST(events(*process(), hidden).size() > 0u, "bob's session is still there");
}

BOOST_AUTO_TEST_SUITE_END()
