// Recall by content in a PostgreSQL store (PgStore::search_content / index_content, schema version
// 5's dsh_acp.search): texts indexed after their lines' commit by the writer's store (its indexer),
// caught up from the lines when that never happened, never doubled; row security between people (a
// role never finds, nor is ranked by, what it cannot read), deletion, the migration from version 4
// and its backfill, and the same question finding the same session in a file root.
#include "../common/new_events.hpp"
#include "../common/temp_dir.hpp"
#include "scratch_db.hpp"
#include "support.hpp"

#include "store/content_search.hpp"
#include "store/errors.hpp"
#include "store/pg/connection.hpp"
#include "store/pg/pg_appender.hpp"
#include "store/pg/pg_store.hpp"
#include "store/pg/schema.hpp"
#include "store/session_store.hpp"
#include "store/session_writer.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

using namespace acp::store;
using namespace acp::store::pg;
namespace json = boost::json;

namespace {

// A database of this test's own with two people; `version` below kSchemaVersion leaves it older
// (a store cannot open it until migrated).
struct Db {
  pg_test::ScratchDb db;
  PgConnection super;
  std::string alice, bob;

  explicit Db(int version = kSchemaVersion) : super(db.connect()) {
    migrate(super, version);
    alice = pg_test::ensure_person(super, "alice");
    bob = pg_test::ensure_person(super, "bob");
  }
  std::unique_ptr<PgStore> store(const std::string& user, Generation g = Generation::flat) const {
    PgStoreOptions o;
    o.url = db.url(user);
    o.generation = g;
    o.listen = false;
    return std::make_unique<PgStore>(o);
  }
  std::int64_t count(const std::string& sql) { return super.exec(sql).int64(0, 0); }
};

using acp::test::TempDir;

std::unique_ptr<SessionStore> file_store(const TempDir& dir, Generation g = Generation::flat) {
  StoreOptions o;
  o.root = dir.path() + "/root";
  o.encoding = Encoding::none;
  o.generation = g;
  return std::make_unique<SessionStore>(o);
}

SessionHeader header(const std::string& id, std::int64_t created = 1000) {
  SessionHeader h;
  h.id = id;
  h.cwd = "/work/project";
  h.createdAt = created;
  return h;
}

using acp::test_events::ev;
using acp::test_events::text;

// One finished turn: the person's words, a tool call and its result, the agent's answer (and its
// reasoning, which is never indexed), written as a writer streams it (several batches).
void write_turn(SessionWriter& w, int n, const std::string& said, const std::string& answer,
                const std::string& tool_output = "ok", const std::string& thought = "") {
  const std::string k = std::to_string(n);
  const std::int64_t t = 5000 + 10 * n;
  w.append({ev("turn/start", {{"turn", n}}, t),
            ev("user/message", {{"turn", n}, {"content", text(said)}, {"id", "u" + k}}, t, true)});
  w.append({ev("step/start", {{"turn", n}, {"step", 1}}, t + 1),
            ev("assistant/chunk", {{"turn", n}, {"step", 1}, {"index", 0}, {"delta", answer}}, t + 1)});
  json::array content;
  if (!thought.empty()) content.push_back(json::object{{"type", "reasoning"}, {"text", thought}});
  content.push_back(json::object{{"type", "tool-call"}, {"id", "c" + k}, {"name", "read"}, {"arguments", "{}"}});
  w.append({ev("assistant/message", {{"turn", n}, {"step", 1}, {"content", content}, {"id", "a" + k}}, t + 2, true),
            ev("tool/call", {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"name", "read"}, {"arguments", "{\"path\":\"notes.txt\"}"}},
               t + 3)});
  w.append({ev("tool/result",
               {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"content", text(tool_output)}, {"isError", false}, {"id", "t" + k}},
               t + 4, true),
            ev("step/end", {{"turn", n}, {"step", 1}}, t + 5)},
           true);
  w.append({ev("step/start", {{"turn", n}, {"step", 2}}, t + 6),
            ev("assistant/message", {{"turn", n}, {"step", 2}, {"content", text(answer)}, {"id", "b" + k}}, t + 7, true),
            ev("step/end", {{"turn", n}, {"step", 2}}, t + 8),
            ev("turn/end", {{"turn", n}, {"reason", {{"kind", "completed"}}}}, t + 9)},
           true);
}

void session(Backend& b, const std::string& id, const std::string& said, const std::string& answer,
             const std::string& tool_output = "ok", std::int64_t created = 1000) {
  auto w = b.create(header(id, created));
  write_turn(w, 1, said, answer, tool_output);
}

std::vector<ContentHit> search(Backend& b, const std::string& words, std::size_t limit = 10,
                               std::vector<std::string> exclude = {}) {
  ContentQuery q;
  q.words = words;
  q.limit = limit;
  q.exclude = std::move(exclude);
  return b.search_content(q);
}

std::vector<std::string> ids(const std::vector<ContentHit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.session_id);
  return out;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The copy `dsh-acp store copy` makes: every line, verbatim, through export_lines / import_lines.
void copy_session(Backend& from, Backend& to, const std::string& id) {
  std::string header_line;
  std::vector<std::string> lines;
  Generation g = from.export_lines(
      id, [&](std::string_view h) { header_line = h; }, [&](std::string_view l) { lines.emplace_back(l); });
  to.import_lines(id, g, header_line, 0, lines);
}

} // namespace

BOOST_AUTO_TEST_SUITE(pg_search)

BOOST_AUTO_TEST_CASE(own_sessions_are_found_best_first_at_their_best_text) {
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << generation_name(g)) {
      Db db;
      auto pg = db.store(db.alice, g);
      const std::string p = std::string(generation_name(g)) + "-";
      session(*pg, p + "moon", "How far away is the Moon from the Earth?", "About 384,400 kilometres on average.");
      session(*pg, p + "tides", "Why are there tides?", "The moon pulls the oceans; tides follow the Moon and the sun.",
              "tide tables for Brest", 2000);
      session(*pg, p + "bread", "How do I bake sourdough bread?", "Feed the starter, then knead.", "ok", 3000);

      // One hit per session, at the text that matched best, with its seq, kind and a snippet.
      auto moon = search(*pg, "moon");
      BOOST_TEST_REQUIRE(moon.size() == 2u);
      std::map<std::string, ContentHit> by_id;
      for (const auto& h : moon) by_id[h.session_id] = h;
      BOOST_TEST_REQUIRE(by_id.count(p + "moon") == 1u);
      BOOST_TEST((by_id[p + "moon"].kind == TextKind::user));
      BOOST_TEST(by_id[p + "moon"].seq == 1);
      BOOST_TEST(by_id[p + "moon"].snippet == "How far away is the Moon from the Earth?");
      BOOST_TEST((by_id[p + "tides"].kind == TextKind::agent));
      BOOST_TEST(contains(by_id[p + "tides"].snippet, "the Moon and the sun"), by_id[p + "tides"].snippet);
      // More of the terms first; terms the question drops (stop words, case) change nothing.
      BOOST_TEST((ids(search(*pg, "the TIDES of the moon")) == std::vector<std::string>{p + "tides", p + "moon"}));
      BOOST_TEST((ids(search(*pg, "moon earth")) == std::vector<std::string>{p + "moon", p + "tides"}));
      // Tool results and a tool call's arguments are found; words are whole words, a path in pieces.
      BOOST_TEST((ids(search(*pg, "Brest")) == std::vector<std::string>{p + "tides"}));
      BOOST_TEST(search(*pg, "notes").size() == 3u);
      BOOST_TEST(search(*pg, "bre").empty());
      // exclude and limit.
      BOOST_TEST((ids(search(*pg, "moon", 10, {p + "moon"})) == std::vector<std::string>{p + "tides"}));
      BOOST_TEST(search(*pg, "moon", 1).size() == 1u);
      // Nothing to search for, nothing found; what the person typed is never query syntax.
      BOOST_TEST(search(*pg, "the of a").empty());
      BOOST_TEST(search(*pg, "").empty());
      BOOST_TEST(search(*pg, "!moon & | ' \\ ( :* <-> \"bread").size() == 3u);
    }
  }
}

BOOST_AUTO_TEST_CASE(texts_are_indexed_after_their_commit_and_reasoning_is_never_indexed) {
  Db db;
  auto writer = db.store(db.alice);
  auto reader = db.store(db.alice);  // another process's store: nothing shared but the database
  auto w = writer->create(header("s"));
  write_turn(w, 1, "first question about quasars", "an answer", "ok", "secret pulsar musings");
  // The writer's own store finds a turn as soon as the batch returned: a search waits for its indexer.
  BOOST_TEST((ids(search(*writer, "quasars")) == std::vector<std::string>{"s"}));
  BOOST_TEST(search(*writer, "pulsar").empty());
  w.append({ev("turn/start", {{"turn", 2}}, 9000),
            ev("user/message", {{"turn", 2}, {"content", text("now about nebulae")}, {"id", "u2"}}, 9000, true)});
  // Another process finds it once the writer's indexer committed the texts.
  BOOST_TEST_REQUIRE(writer->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST((ids(search(*reader, "nebulae")) == std::vector<std::string>{"s"}));
  BOOST_TEST((ids(search(*reader, "quasars")) == std::vector<std::string>{"s"}));
  // Every text of the session is there once, and the session's texts are complete.
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE session_id = 's'") == 5);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count = event_count") == 1);
  BOOST_TEST(reader->index_content().indexed == 0u);
  // Batches without texts (the turn's end) keep the count complete by themselves.
  w.append({ev("turn/end", {{"turn", 2}, {"reason", {{"kind", "completed"}}}}, 9001)}, true);
  BOOST_TEST_REQUIRE(writer->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count = event_count") == 1);
}

// A writer's process killed between a batch's commit and its texts (or a queue that was full) leaves
// lines behind indexed_count: the writer's next batch finds the gap and indexes it from the lines,
// another process's search catches up a session nobody writes, and nothing is ever stored twice.
BOOST_AUTO_TEST_CASE(texts_lost_before_indexing_are_caught_up_from_the_lines_once) {
  Db db;
  // The state a kill leaves: lines committed by the writer's statement, their texts never indexed.
  auto commit_unindexed = [&](const std::string& id, bool create, const std::string& said) {
    TempDir dir;
    auto files = file_store(dir);
    {
      // A continued session's turn 1 is in the database already: the lines past it are turn 2's.
      auto w = files->create(header(id));
      if (!create) write_turn(w, 1, "otters", "rivers");
      write_turn(w, create ? 1 : 2, said, "noted");
    }
    std::string header_line;
    std::vector<std::string> lines;
    files->export_lines(id, [&](std::string_view h) { header_line = h; }, [&](std::string_view l) { lines.emplace_back(l); });
    const std::int64_t have = create ? 0 : db.count("SELECT event_count FROM dsh_acp.sessions WHERE id = '" + id + "'");
    std::vector<LineRow> rows;
    for (std::size_t i = std::size_t(have); i < lines.size(); ++i) rows.push_back(LineRow{std::int64_t(i), "x", 0, lines[i]});
    BatchEffect effect;
    effect.first_seq = have;
    effect.next_seq = std::int64_t(lines.size());
    PgConnection raw = db.db.connect(db.alice);
    Transaction tx(raw);
    if (create) {
      raw.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at, event_count)"
               " VALUES ($1, '45fc', $2, 1000, 0, 0)",
               {id, header_line});
    }
    insert_lines(raw, id, id, rows, effect, true, Commit::durable, {}, true);
    tx.commit();
  };
  auto lag = [&](const std::string& id) {
    return db.count("SELECT event_count - indexed_count FROM dsh_acp.sessions WHERE id = '" + id + "'");
  };

  // A session the writer's process goes on writing: its next batch's texts find the gap, and the
  // indexer reads the missing texts from the lines.
  auto writer = db.store(db.alice);
  {
    auto w = writer->create(header("kept"));
    write_turn(w, 1, "otters", "rivers");
  }
  BOOST_TEST_REQUIRE(writer->wait_indexed(std::chrono::seconds(30)));
  commit_unindexed("kept", false, "herons fishing");
  BOOST_TEST(lag("kept") > 0);
  {
    auto w = writer->open("kept");
    write_turn(w, 3, "kingfishers dive", "fast");
  }
  BOOST_TEST_REQUIRE(writer->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST(lag("kept") == 0);
  // Turns 1 and 3 from their batches, turn 2 from the lines: 4 texts each, none twice.
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE session_id = 'kept'") == 12);
  BOOST_TEST((ids(search(*writer, "kingfishers")) == std::vector<std::string>{"kept"}));
  BOOST_TEST((ids(search(*writer, "herons")) == std::vector<std::string>{"kept"}));

  // A session nobody writes any more: another process's search catches it up before answering.
  commit_unindexed("orphan", true, "beavers build dams");
  BOOST_TEST(lag("orphan") > 0);
  auto later = db.store(db.alice);
  BOOST_TEST((ids(search(*later, "beavers")) == std::vector<std::string>{"orphan"}));
  BOOST_TEST(lag("orphan") == 0);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE session_id = 'orphan'") == 4);

  // Caught up again (an indexer, a backfill and a search beside each other): nothing doubles.
  const std::int64_t rows = db.count("SELECT count(*) FROM dsh_acp.search");
  db.super.exec("UPDATE dsh_acp.sessions SET indexed_count = 0");
  BOOST_TEST(later->index_content().indexed == 2u);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search") == rows);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count <> event_count") == 0);
  // Bob cannot see, let alone index, alice's sessions.
  auto bob = db.store(db.bob);
  BOOST_TEST(search(*bob, "beavers").empty());
  BOOST_TEST(bob->index_content().indexed == 0u);
}

BOOST_AUTO_TEST_CASE(a_role_finds_only_what_it_can_read_and_is_ranked_by_nothing_else) {
  Db db;
  auto alice = db.store(db.alice);
  auto bob = db.store(db.bob);
  session(*alice, "a-private", "zebra crossing rules", "Stop for pedestrians.");
  session(*bob, "b-own", "zebra stripes and giraffe spots", "Camouflage.");
  BOOST_TEST_REQUIRE(alice->wait_indexed(std::chrono::seconds(30)));
  auto before = search(*bob, "zebra giraffe");
  BOOST_TEST_REQUIRE((ids(before) == std::vector<std::string>{"b-own"}));
  // Alice writes more about zebras, privately: bob's answer and its score do not move.
  for (int i = 0; i < 3; ++i) session(*alice, "a-more-" + std::to_string(i), "zebra zebra", "zebra facts");
  BOOST_TEST_REQUIRE(alice->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE session_id LIKE 'a-more-%'") == 12);
  auto after = search(*bob, "zebra giraffe");
  BOOST_TEST_REQUIRE(after.size() == 1u);
  BOOST_TEST(after[0].score == before[0].score);
  BOOST_TEST(after[0].snippet == before[0].snippet);
  BOOST_TEST(search(*bob, "crossing").empty());
  BOOST_TEST(search(*bob, "pedestrians").empty());

  // Shared, found; unshared, gone again.
  alice->set_shared("a-private", true);
  BOOST_TEST((ids(search(*bob, "crossing")) == std::vector<std::string>{"a-private"}));
  BOOST_TEST(search(*bob, "zebra").size() == 2u);
  alice->set_shared("a-private", false);
  BOOST_TEST(search(*bob, "crossing").empty());
  BOOST_TEST(search(*bob, "zebra").size() == 1u);

  // An id of bob's own hides alice's shared session of the same id, as his listing does.
  session(*bob, "a-private", "my own scribbles", "nothing on crossings");
  alice->set_shared("a-private", true);
  BOOST_TEST(search(*bob, "crossing").empty());
  BOOST_TEST((ids(search(*bob, "scribbles")) == std::vector<std::string>{"a-private"}));
  BOOST_TEST(search(*bob, "scribbles")[0].snippet == "my own scribbles");
  // Bob cannot write texts into alice's session, nor take hers away.
  PgConnection raw = db.db.connect(db.bob);
  BOOST_CHECK_THROW(raw.exec("INSERT INTO dsh_acp.search (owner, session_id, seq, kind, text, tsv)"
                             " VALUES ($1, 'a-private', 99, 'user', 'forged', 'forged')",
                             {db.alice}),
                    PgError);
  BOOST_TEST(raw.exec("DELETE FROM dsh_acp.search WHERE owner = $1", {db.alice}).affected() == 0);
  BOOST_TEST((ids(search(*alice, "crossing")) == std::vector<std::string>{"a-private"}));
}

// A question of words that 100 texts or more of one's own hold is answered from the person's own
// texts without the GIN index (whose bitmap of such a word costs every text holding it): still by how
// many of the words a text holds, and still nothing of anyone else's.
BOOST_AUTO_TEST_CASE(common_words_are_ranked_from_ones_own_texts) {
  Db db;
  auto alice = db.store(db.alice);
  for (int i = 0; i < 60; ++i) {
    auto w = alice->create(header("s" + std::to_string(100 + i), 1000 + i));
    write_turn(w, 1, "apple", "apple banana", "banana");
  }
  {
    auto w = alice->create(header("z-best", 5000));
    write_turn(w, 1, "apple banana", "apple banana", "apple banana");
  }
  BOOST_TEST_REQUIRE(alice->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE tsv @@ 'apple'") >= 100);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE tsv @@ 'banana'") >= 100);
  auto hits = search(*alice, "apple banana");
  BOOST_TEST_REQUIRE(hits.size() == 10u);
  BOOST_TEST(hits[0].session_id == "z-best");  // every text of it holds both
  BOOST_TEST(hits[0].score > hits[1].score);
  BOOST_TEST((ids(search(*alice, "apple banana", 10, {"z-best"}))[0] != "z-best"));
  // Bob holds none of it, and reads none of it.
  auto bob = db.store(db.bob);
  BOOST_TEST(search(*bob, "apple banana").empty());
  alice->set_shared("z-best", true);
  BOOST_TEST((ids(search(*bob, "apple banana")) == std::vector<std::string>{"z-best"}));
}

BOOST_AUTO_TEST_CASE(a_deleted_session_takes_its_texts_with_it) {
  Db db;
  auto pg = db.store(db.alice);
  session(*pg, "gone", "walrus tusks", "ivory");
  session(*pg, "kept", "walrus habitat", "arctic");
  BOOST_TEST(search(*pg, "walrus").size() == 2u);
  pg->delete_session("gone");
  BOOST_TEST((ids(search(*pg, "walrus")) == std::vector<std::string>{"kept"}));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search WHERE session_id = 'gone'") == 0);
  // The id made again starts with no texts of the old session's.
  session(*pg, "gone", "penguins", "antarctic");
  BOOST_TEST(search(*pg, "tusks").empty());
  BOOST_TEST((ids(search(*pg, "penguins")) == std::vector<std::string>{"gone"}));
  db.super.exec("TRUNCATE dsh_acp.sessions");
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search") == 0);
}

// Lines an older dsh-acp wrote (before the migration, or a server of version 4 still running)
// carry no texts: index_content indexes them from the lines, once; a search indexes a few itself.
BOOST_AUTO_TEST_CASE(a_version_4_database_migrates_and_index_content_backfills_its_sessions) {
  Db db(4);
  // Sessions as version 4 held them: lines of a file store's, inserted by their owners.
  TempDir dir;
  auto files = file_store(dir);
  session(*files, "a1", "lighthouse keeper diaries", "Storms and lamps.");
  session(*files, "a2", "lighthouse lenses", "Fresnel.", "ok", 2000);
  session(*files, "b1", "lighthouse of Alexandria", "A wonder.", "ok", 3000);
  auto insert_as = [&](const std::string& role, const std::string& id) {
    PgConnection c = db.db.connect(role);
    std::string header_line;
    std::vector<std::string> lines;
    files->export_lines(id, [&](std::string_view h) { header_line = h; }, [&](std::string_view l) { lines.emplace_back(l); });
    BOOST_TEST_REQUIRE(lines.size() == files->read_log(id).events.size());  // one event a line: seq = line
    c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at, event_count)"
           " VALUES ($1, '45fc', $2, $3::bigint, 0, $4::bigint)",
           {id, header_line, id == "b1" ? "3000" : "1000", std::to_string(lines.size())});
    for (std::size_t i = 0; i < lines.size(); ++i)
      c.exec("INSERT INTO dsh_acp.events (session_id, seq, type, time, line) VALUES ($1, $2::bigint, 'x', 0, $3)",
             {id, std::to_string(i), lines[i]});
  };
  insert_as(db.alice, "a1");
  insert_as(db.alice, "a2");
  insert_as(db.bob, "b1");
  db.super.exec("UPDATE dsh_acp.sessions SET shared = true WHERE id = 'b1'");

  migrate(db.super);
  BOOST_TEST(schema_version(db.super).value_or(-1) == kSchemaVersion);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count = 0") == 3);
  auto alice = db.store(db.alice);
  // Her own: indexed, with progress; bob's shared session is his to index.
  std::vector<IndexProgress> seen;
  IndexProgress p = alice->index_content([&](const IndexProgress& x) { seen.push_back(x); });
  BOOST_TEST(p.total == 3u);
  BOOST_TEST(p.done == 3u);
  BOOST_TEST(p.indexed == 2u);
  BOOST_TEST_REQUIRE(seen.size() == 3u);
  BOOST_TEST(seen.front().done == 1u);  // bob's, which she cannot index, counts as looked at
  BOOST_TEST(seen.back().done == 3u);
  auto lighthouse = ids(search(*alice, "lighthouse"));
  std::sort(lighthouse.begin(), lighthouse.end());
  BOOST_TEST((lighthouse == std::vector<std::string>{"a1", "a2"}));
  BOOST_TEST(search(*alice, "alexandria").empty());
  // Again: nothing to do, nothing doubled.
  const std::int64_t rows = db.count("SELECT count(*) FROM dsh_acp.search");
  BOOST_TEST(alice->index_content().indexed == 0u);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search") == rows);
  // Bob indexes his own (here: his first search catches it up), and alice finds it.
  auto bob = db.store(db.bob);
  BOOST_TEST((ids(search(*bob, "alexandria")) == std::vector<std::string>{"b1"}));
  BOOST_TEST((ids(search(*alice, "alexandria")) == std::vector<std::string>{"b1"}));
  BOOST_TEST(bob->index_content().indexed == 0u);
  // A writer continues a backfilled session with its texts, and keeps it complete.
  {
    auto w = alice->open("a1");
    write_turn(w, 2, "foghorn", "loud");
  }
  BOOST_TEST((ids(search(*alice, "foghorn")) == std::vector<std::string>{"a1"}));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count <> event_count") == 0);
}

// A version-4 server still running beside the migration writes lines without texts: the session's
// indexed_count stays behind, and a later batch's texts do not move it on past the gap: the indexer
// finds the gap and reads the missing texts from the lines.
BOOST_AUTO_TEST_CASE(lines_written_without_texts_are_caught_up_without_doubling) {
  Db db;
  auto pg = db.store(db.alice);
  session(*pg, "s", "otters", "rivers");
  // As the old server appends a turn: lines only.
  {
    TempDir dir;
    auto files = file_store(dir);
    {
      auto w = files->create(header("s"));
      write_turn(w, 1, "otters", "rivers");
      write_turn(w, 2, "beavers build dams", "with sticks");
    }
    std::vector<std::string> lines;
    files->export_lines("s", {}, [&](std::string_view l) { lines.emplace_back(l); });
    const std::int64_t have = db.count("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'");
    PgConnection old = db.db.connect(db.alice);
    Transaction tx(old);
    for (std::size_t i = std::size_t(have); i < lines.size(); ++i)
      old.exec("INSERT INTO dsh_acp.events (session_id, seq, type, time, line) VALUES ('s', $1::bigint, 'x', 0, $2)",
               {std::to_string(i), lines[i]});
    old.exec("UPDATE dsh_acp.sessions SET event_count = $1::bigint WHERE id = 's'", {std::to_string(lines.size())});
    tx.commit();
  }
  const std::int64_t gap = db.count("SELECT indexed_count FROM dsh_acp.sessions WHERE id = 's'");
  BOOST_TEST(gap < db.count("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'"));
  // This version writes on: its texts do not continue the stored ones, so the old server's turn is
  // read from its lines first; every turn's 4 texts are there once.
  {
    auto w = pg->open("s");
    write_turn(w, 3, "kingfishers", "dive");
  }
  BOOST_TEST_REQUIRE(pg->wait_indexed(std::chrono::seconds(30)));
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.sessions WHERE indexed_count = event_count") == 1);
  BOOST_TEST(db.count("SELECT count(*) FROM dsh_acp.search") == 12);
  BOOST_TEST((ids(search(*pg, "beavers")) == std::vector<std::string>{"s"}));
  BOOST_TEST((ids(search(*pg, "kingfishers")) == std::vector<std::string>{"s"}));
  BOOST_TEST(pg->index_content().indexed == 0u);
}

// Both backends index indexable_texts and search with content_terms: one question, one answer.
BOOST_AUTO_TEST_CASE(the_same_question_finds_the_same_session_in_a_file_root_and_in_postgresql) {
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << generation_name(g)) {
      Db db;
      TempDir dir;
      auto files = file_store(dir, g);
      auto pg = db.store(db.alice, g);
      const std::string p = std::string(generation_name(g)) + "-";
      session(*files, p + "rust", "Port the parser to Rust?", "Borrow checker first.", "cargo build: ok", 1000);
      session(*files, p + "pg", "Why is the PostgreSQL query slow?", "Add a GIN index on the tsvector.",
              "EXPLAIN ANALYZE: Seq Scan on search", 2000);
      session(*files, p + "gardens", "Which roses survive frost?", "Rugosa roses.", "ok", 3000);
      for (const std::string id : {"rust", "pg", "gardens"}) copy_session(*files, *pg, p + id);
      for (const std::string q : {"postgresql gin index", "rugosa", "cargo", "roses frost", "parser rust", "explain analyze"}) {
        auto f = search(*files, q), s = search(*pg, q);
        BOOST_TEST_REQUIRE(!f.empty(), q);
        BOOST_TEST_REQUIRE(!s.empty(), q);
        BOOST_TEST(f[0].session_id == s[0].session_id, q);
        BOOST_TEST(f[0].seq == s[0].seq, q);
        BOOST_TEST((f[0].kind == s[0].kind), q);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
