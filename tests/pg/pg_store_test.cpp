// PgStore (src/store/pg/pg_store.hpp) against the suite's own PostgreSQL: every test gets a
// database of its own, migrated, and roles of its own in dsh_acp_user. The file backend
// (SessionStore) is the oracle: the same batches written to both read back the same, and the stored
// lines are the file's bytes.
#include "../common/new_events.hpp"
#include "../common/temp_dir.hpp"
#include "scratch_db.hpp"
#include "support.hpp"

#include "store/chunk_lines.hpp"
#include "store/errors.hpp"
#include "store/pg/connection.hpp"
#include "store/pg/pg_store.hpp"
#include "store/pg/schema.hpp"
#include "store/session_store.hpp"
#include "store/session_writer.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

using namespace acp::store;
using namespace acp::store::pg;
using namespace std::chrono;
namespace json = boost::json;

namespace {

// DSH_ACP_TEST_PG with another user and database: postgresql://USER@/DB?QUERY.
std::string url_as(const std::string& user, const std::string& db) {
  const std::string u = pg_test::url();
  const std::size_t scheme = u.find("://");
  BOOST_TEST_REQUIRE(scheme != std::string::npos, "DSH_ACP_TEST_PG must be a URL: " << u);
  const std::size_t q = u.find('?', scheme);
  const std::string query = q == std::string::npos ? std::string() : u.substr(q);
  std::string hostpart = u.substr(scheme + 3, (q == std::string::npos ? u.size() : q) - scheme - 3);
  if (auto at = hostpart.find('@'); at != std::string::npos) hostpart = hostpart.substr(at + 1);
  hostpart = hostpart.substr(0, hostpart.find('/'));
  return "postgresql://" + user + "@" + hostpart + "/" + db + query;
}

// A database of this test's own, migrated, with two people (LOGIN IN ROLE dsh_acp_user).
struct Db {
  std::string name, alice, bob;
  pg_test::Connection admin;  ///< superuser on the test database

  Db() {
    static std::atomic<int> counter{0};
    name = "pgstore_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    alice = pg_test::unique_role("alice");
    bob = pg_test::unique_role("bob");
    auto root = pg_test::connect();
    pg_test::exec(root.get(), "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    pg_test::exec(root.get(), "CREATE DATABASE " + name);
    {
      PgConnection c = PgConnection::connect(url_as("postgres", name));
      migrate(c);
    }
    for (const auto& r : {alice, bob}) {
      pg_test::Result exists(PQexec(root.get(), ("SELECT 1 FROM pg_roles WHERE rolname = '" + r + "'").c_str()));
      if (PQntuples(exists.get()) == 0) pg_test::exec(root.get(), "CREATE ROLE " + r + " LOGIN IN ROLE dsh_acp_user");
    }
    admin = pg_test::Connection(PQconnectdb(url_as("postgres", name).c_str()));
    BOOST_TEST_REQUIRE(PQstatus(admin.get()) == CONNECTION_OK);
  }
  ~Db() {
    admin.reset();
    auto root = pg_test::try_connect();
    pg_test::Result(PQexec(root.get(), ("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").c_str()));
  }

  std::string url(const std::string& user) const { return url_as(user, name); }

  std::unique_ptr<PgStore> store(const std::string& user, Generation g = Generation::flat,
                                 milliseconds lock_timeout = milliseconds(2000)) const {
    PgStoreOptions o;
    o.url = url(user);
    o.generation = g;
    o.lock_timeout = lock_timeout;
    return std::make_unique<PgStore>(o);
  }

  std::string value(const std::string& sql) { return pg_test::value(admin.get(), sql); }
  void exec(const std::string& sql) { pg_test::exec(admin.get(), sql); }
  /// Ends the backends of `user` that hold a session's lock (a writer's lock connection), and waits
  /// until they are gone.
  int kill_lock_holders(const std::string& user) {
    return std::stoi(value("SELECT count(pg_terminate_backend(pid, 60000)) FROM pg_stat_activity WHERE pid IN (SELECT pid" +
                           std::string(kLockers) + ") AND usename = '" + user + "'"));
  }
  /// Connections holding (or waiting for) a session's lock: their transaction locked rows of
  /// session_locks (pg_locks: the table's ROW SHARE lock, granted).
  static constexpr std::string_view kLockers =
      " FROM pg_locks WHERE locktype = 'relation' AND relation = 'dsh_acp.session_locks'::regclass"
      " AND mode = 'RowShareLock' AND granted";
  /// Of those, the ones waiting (a lock not granted).
  std::string lock_waiters() {
    return value("SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted AND pid IN (SELECT pid" + std::string(kLockers) + ")");
  }
  /// Connections holding a session's lock (of `user`'s, when given).
  std::string lock_holders(const std::string& user = "") {
    const std::string whose = user.empty() ? "" : " AND pid IN (SELECT pid FROM pg_stat_activity WHERE usename = '" + user + "')";
    return value("SELECT count(*)" + std::string(kLockers) + " AND pid NOT IN (SELECT pid FROM pg_locks WHERE NOT granted)" +
                 whose);
  }
};

using acp::test::TempDir;

std::unique_ptr<SessionStore> file_store(const TempDir& dir, Generation g) {
  StoreOptions o;
  o.root = dir.path() + "/root";
  o.encoding = Encoding::none;
  o.generation = g;
  return std::make_unique<SessionStore>(o);
}

SessionHeader header(const std::string& id, std::optional<std::string> cwd = "/work/project",
                     std::int64_t created = 1000) {
  SessionHeader h;
  h.id = id;
  h.cwd = std::move(cwd);
  h.createdAt = created;
  return h;
}

using acp::test_events::ev;
using acp::test_events::text;

// The batches of one prompt turn with a tool call; `finished` false leaves it open after the call
// (a writer that died mid-turn). Message ids are given, so a 0.1 writer mints none (the two stores
// then write the same bytes).
std::vector<std::vector<NewEvent>> turn(int n, bool finished = true, std::int64_t t = 5000) {
  const std::string k = std::to_string(n);
  std::vector<std::vector<NewEvent>> out;
  out.push_back({ev("turn/start", {{"turn", n}}, t),
                 ev("user/message", {{"turn", n}, {"content", text("question " + k)}, {"id", "u" + k}}, t, true)});
  std::vector<NewEvent> b2;
  if (n == 1)
    b2.push_back(ev("session/title", {{"title", "Title " + k}, {"messageSeqs", json::array{1}}, {"source", {{"kind", "user"}}}},
                    t + 1));
  b2.push_back(ev("step/start", {{"turn", n}, {"step", 1}}, t + 1));
  b2.push_back(ev("assistant/chunk", {{"turn", n}, {"step", 1}, {"index", 0}, {"delta", "thinking \"quoted\" \\ é"}}, t + 2));
  out.push_back(std::move(b2));
  json::array content = text("answer " + k);
  content.push_back(json::object{{"type", "tool-call"}, {"id", "c" + k}, {"name", "read"}, {"arguments", "{}"}});
  out.push_back({ev("assistant/message",
                    {{"turn", n}, {"step", 1}, {"content", content}, {"provenance", {{"provider", "echo"}, {"model", "m"}}},
                     {"id", "a" + k}},
                    t + 3, true),
                 ev("tool/call", {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"name", "read"}}, t + 4)});
  if (finished)
    out.push_back({ev("tool/result",
                      {{"turn", n}, {"step", 1}, {"callId", "c" + k}, {"content", text("file")}, {"isError", false}, {"id", "t" + k}},
                      t + 5, true),
                   ev("step/end", {{"turn", n}, {"step", 1}}, t + 6),
                   ev("turn/end", {{"turn", n}, {"reason", {{"kind", "completed"}}}}, t + 7)});
  return out;
}

void write_batches(SessionWriter& w, std::vector<std::vector<NewEvent>> batches) {
  for (auto& b : batches) w.append(std::move(b));
}

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// header line + event lines as exported.
std::vector<std::string> exported(Backend& s, const std::string& id, Generation* g = nullptr) {
  std::vector<std::string> out;
  Generation shape = s.export_lines(
      id, [&](std::string_view h) { out.emplace_back(h); }, [&](std::string_view l) { out.emplace_back(l); });
  if (g) *g = shape;
  return out;
}

std::vector<std::int64_t> stored_seqs(Db& db, const std::string& id) {
  pg_test::Result r(PQexec(db.admin.get(), ("SELECT seq FROM dsh_acp.events WHERE session_id = '" + id + "' ORDER BY seq").c_str()));
  std::vector<std::int64_t> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(std::stoll(PQgetvalue(r.get(), i, 0)));
  return out;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

template <class E, class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  BOOST_FAIL("expected exception not thrown");
  return {};
}

bool lists(PgStore& s, const std::string& id) {
  for (const auto& row : s.list_sessions())
    if (row.header.id == id) return true;
  return false;
}

// Asks `s` for its listing until `id` is in it (or not, `present` false). No time limit: a change
// that never shows ends the test at its CTest timeout.
bool listing_shows(PgStore& s, const std::string& id, bool present = true) {
  while (lists(s, id) != present) std::this_thread::sleep_for(milliseconds(5));
  return true;
}

// How long wait_listening() may take: no limit in effect (a listener that never comes back ends the
// test at its CTest timeout).
constexpr auto kListening = std::chrono::hours(1);

} // namespace

BOOST_AUTO_TEST_SUITE(pg_store)

BOOST_AUTO_TEST_CASE(writes_read_back_as_the_file_store_reads_them_in_both_generations) {
  Db db;
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << acp::store::generation_name(g)) {
      TempDir dir;
      auto files = file_store(dir, g);
      auto pg = db.store(db.alice, g);
      const std::string id = std::string("s-") + std::string(acp::store::generation_name(g));
      for (Backend* b : {static_cast<Backend*>(files.get()), static_cast<Backend*>(pg.get())}) {
        {
          auto w = b->create(header(id));
          write_batches(w, turn(1));
        }
        auto w = b->open(id);  // a second write sequence continues the log
        write_batches(w, turn(2, true, 9000));
        w.release();
      }
      LogSnapshot a = files->read_log(id), p = pg->read_log(id);
      BOOST_TEST(p.events.size() == a.events.size());
      BOOST_TEST((p.events == a.events));
      BOOST_TEST(p.header.id == a.header.id);
      BOOST_TEST(p.header.createdAt == a.header.createdAt);
      BOOST_TEST((p.header.cwd == a.header.cwd));
      BOOST_TEST(p.path == pg->locator(id));
      // The stored text is the file's, byte for byte, in the generation's shape.
      Generation shape;
      BOOST_TEST((exported(*pg, id, &shape) == file_lines(*files->find_log(id))));
      BOOST_TEST((shape == g));
      BOOST_TEST((stored_seqs(db, id) == iota(std::int64_t(a.events.size()))));
      // The listing row says what the file store's says.
      auto fl = files->list_sessions(), pl = pg->list_sessions();
      BOOST_TEST_REQUIRE(pl.size() == 1u);
      BOOST_TEST(pl[0].header.id == id);
      BOOST_TEST((pl[0].title == fl[0].title));
      BOOST_TEST(pl[0].updatedAt == fl[0].updatedAt);
      BOOST_TEST(pl[0].sizeBytes == fl[0].sizeBytes);
      BOOST_TEST((pl[0].owner == db.alice));
      BOOST_TEST(!pl[0].shared);
      pg->delete_session(id);
      BOOST_TEST(!pg->find_log(id));
      BOOST_CHECK_THROW(pg->read_log(id), SessionNotFound);
    }
  }
}

// A chunk batch written as lines (store/chunk_lines.hpp) reaches PostgreSQL through the default
// Appender::write_plain, which parses the lines back into records: the same batch given to both
// stores leaves the same stored text, events, seqs and listing time in each.
BOOST_AUTO_TEST_CASE(chunk_lines_are_stored_as_the_file_store_stores_them) {
  Db db;
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << acp::store::generation_name(g)) {
      TempDir dir;
      auto files = file_store(dir, g);
      auto pg = db.store(db.alice, g);
      const std::string id = std::string("chunks-") + std::string(acp::store::generation_name(g));
      auto wf = files->create(header(id));
      auto wp = pg->create(header(id));
      write_batches(wf, turn(1));
      write_batches(wp, turn(1));
      ChunkLines lines = wf.chunk_lines();
      lines.add_delta(2, 1, "text-delta", 0, "one \"two\"\n\x01");
      lines.add_delta(2, 1, "reasoning-delta", 1, "caf\xc3\xa9 \xf0\x9f\x98\x80");
      lines.add_event(ev("assistant/chunk", {{"turn", 2}, {"step", 1}, {"chunk", {{"type", "block-end"}, {"index", 1}}}}, 9000));
      for (SessionWriter* w : {&wf, &wp}) {
        w->append_chunk_lines(lines, true);
        BOOST_TEST(w->next_seq() == lines.first_seq() + 3);
        BOOST_TEST(w->last_time() == 9000);
        w->release();
      }
      LogSnapshot a = files->read_log(id), p = pg->read_log(id);
      BOOST_TEST((p.events == a.events));
      BOOST_TEST((exported(*pg, id) == file_lines(*files->find_log(id))));
      BOOST_TEST((stored_seqs(db, id) == iota(std::int64_t(a.events.size()))));
      auto fl = files->list_sessions(), pl = pg->list_sessions();
      BOOST_TEST_REQUIRE(pl.size() == 1u);
      BOOST_TEST(pl[0].updatedAt == fl[0].updatedAt);
      pg->delete_session(id);
    }
  }
}

BOOST_AUTO_TEST_CASE(streamed_read_gives_every_event_and_stops_when_asked) {
  Db db;
  auto pg = db.store(db.alice);
  {
    auto w = pg->create(header("big"));
    // More lines than one FETCH and one INSERT statement hold.
    std::vector<NewEvent> batch;
    batch.push_back(ev("turn/start", {{"turn", 1}}, 1));
    for (int i = 0; i < 2500; ++i)
      batch.push_back(ev("assistant/chunk", {{"turn", 1}, {"step", 1}, {"index", 0}, {"delta", std::to_string(i)}}, 2));
    batch.push_back(ev("turn/end", {{"turn", 1}, {"reason", {{"kind", "completed"}}}}, 3));
    w.append(std::move(batch));
  }
  std::int64_t seen = 0;
  StreamResult r = pg->read_events(
      "big", [&](json::object&& e) { BOOST_TEST(e.at("seq").as_int64() == seen++); }, {}, EventLifetime::transient);
  BOOST_TEST(seen == 2502);
  BOOST_TEST((r.capturedThroughSeq == std::optional<std::int64_t>(2501)));
  std::stop_source stop;
  std::int64_t before_stop = 0;
  BOOST_CHECK_THROW(pg->read_events("big",
                                    [&](json::object&&) {
                                      if (++before_stop == 10) stop.request_stop();
                                    },
                                    stop.get_token()),
                    ReadCancelled);
  BOOST_TEST(before_stop == 10);
  BOOST_TEST((stored_seqs(db, "big") == iota(2502)));
  // The chunk asked for ahead was taken off the connection: the pool's next reader gets it clean.
  BOOST_TEST(pg->read_log("big").events.size() == 2502u);
  BOOST_TEST(pg->list_sessions().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_corrupt_line_names_the_store_the_session_and_the_line) {
  Db db;
  auto pg = db.store(db.alice);
  {
    auto w = pg->create(header("c"));
    write_batches(w, turn(1));
  }
  db.exec("UPDATE dsh_acp.events SET line = '{\"type\":' WHERE session_id = 'c' AND seq = 2");
  const std::string what = message_of<StoreCorrupt>([&] { pg->read_log("c"); });
  BOOST_TEST(what.find(pg->locator("c") + ":4:") == 0u, what);
  BOOST_TEST(what.find("unparsable line") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(a_failed_batch_is_never_half_visible_and_the_writer_goes_on) {
  Db db;
  // A line the server refuses half-way through the batch's INSERT.
  db.exec("CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
          "RAISE EXCEPTION 'refused line'; END $$");
  db.exec("CREATE TRIGGER refuse BEFORE INSERT ON dsh_acp.events FOR EACH ROW WHEN (NEW.line LIKE '%REFUSE-ME%') "
          "EXECUTE FUNCTION public.refuse()");
  auto pg = db.store(db.alice);
  {
    // The first batch publishes the session: refused, the session does not exist at all.
    auto w = pg->create(header("new"));
    BOOST_CHECK_THROW(w.append({ev("turn/start", {{"turn", 1}}, 1), ev("user/message", {{"turn", 1}, {"content", text("REFUSE-ME")}}, 2, true)}),
                      StoreError);
    BOOST_TEST(!pg->find_log("new"));
  }
  auto w = pg->create(header("s"));
  write_batches(w, turn(1));
  const std::string count = db.value("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'");
  // A batch of more rows than one statement takes, refused in its second statement.
  std::vector<NewEvent> batch{ev("turn/start", {{"turn", 2}}, 10)};
  for (int i = 0; i < 1500; ++i)
    batch.push_back(ev("assistant/chunk", {{"turn", 2}, {"step", 1}, {"index", 0}, {"delta", i == 1400 ? "REFUSE-ME" : "x"}}, 11));
  BOOST_CHECK_THROW(w.append(std::move(batch)), StoreError);
  BOOST_TEST(db.value("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'") == count);
  BOOST_TEST((stored_seqs(db, "s") == iota(std::stoll(count))));
  // The writer still holds the session and continues the log where it was.
  write_batches(w, turn(2, true, 20));
  w.release();
  auto again = pg->open("s");
  BOOST_TEST(again.next_seq() == std::int64_t(stored_seqs(db, "s").size()));
  BOOST_TEST((stored_seqs(db, "s") == iota(again.next_seq())));
  BOOST_TEST(again.last_turn() == 2);
}

// A text column cannot hold bytes that are not UTF-8 (the server refuses them midway), so no such
// line was ever stored; the writer refuses it before a statement is sent, as the file writers do.
BOOST_AUTO_TEST_CASE(a_line_that_is_not_utf8_is_refused_before_anything_is_sent) {
  Db db;
  auto pg = db.store(db.alice);
  {
    auto w = pg->create(header("new"));
    BOOST_CHECK_THROW(w.append({ev("turn/start", {{"turn", 1}}, 1), ev("user/message", {{"turn", 1}, {"content", text("A\xFF" "B")}}, 2, true)}),
                      InvalidLogText);
    BOOST_TEST(!pg->find_log("new"));
  }
  auto w = pg->create(header("s"));
  write_batches(w, turn(1));
  const std::string count = db.value("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'");
  BOOST_CHECK_THROW(w.append({ev("turn/start", {{"turn", 2}}, 10), ev("user/message", {{"turn", 2}, {"content", text("n\xE4me")}}, 11, true)}),
                    InvalidLogText);
  BOOST_TEST(db.value("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'") == count);
  write_batches(w, turn(2, true, 20));
  w.release();
  BOOST_TEST((stored_seqs(db, "s") == iota(pg->open("s").next_seq())));
  // Lines copied in: the same refusal, and no session.
  TempDir dir;
  auto files = file_store(dir, Generation::flat);
  {
    auto fw = files->create(header("x"));
    write_batches(fw, turn(1));
  }
  std::vector<std::string> lines = file_lines(*files->find_log("x"));
  const std::string head = lines.front();
  lines.erase(lines.begin());
  auto user = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("user/message") != std::string::npos; });
  BOOST_REQUIRE(user != lines.end());
  user->insert(user->find("\"text\":\"") + 8, "\xC0\xAF");
  BOOST_CHECK_THROW(pg->import_lines("x", Generation::flat, head, 0, lines), InvalidLogText);
  BOOST_TEST(!pg->find_log("x"));
}

BOOST_AUTO_TEST_CASE(unsynced_batches_are_visible_at_once_and_keep_every_byte) {
  Db db;
  TempDir dir;
  auto files = file_store(dir, Generation::flat);
  auto pg = db.store(db.alice);
  auto other = db.store(db.alice);  // another server process of the same person
  // Text an array literal would have to quote, and lines of one statement and of several.
  const std::vector<std::string> deltas{"{a,b}", "\"NULL\"", "NULL", "back\\slash", "é 漢字 🙂", "tab\tand\nnewline",
                                        ""};
  auto batches = [&](int turn_no) {
    std::vector<std::vector<NewEvent>> out;
    out.push_back({ev("turn/start", {{"turn", turn_no}}, 1), ev("user/message", {{"turn", turn_no}, {"content", text("{}")}}, 2, true)});
    std::vector<NewEvent> chunks;
    for (int i = 0; i < 2500; ++i)
      chunks.push_back(ev("assistant/chunk", {{"turn", turn_no}, {"step", 1}, {"index", 0}, {"delta", deltas[i % deltas.size()]}}, 3));
    out.push_back(std::move(chunks));
    out.push_back({ev("turn/end", {{"turn", turn_no}, {"reason", {{"kind", "completed"}}}}, 4)});
    return out;
  };
  for (Backend* b : {static_cast<Backend*>(files.get()), static_cast<Backend*>(pg.get())}) {
    auto w = b->create(header("s"));
    auto turn1 = batches(1);
    for (auto& batch : turn1) w.append(std::move(batch), /*sync=*/false);
    if (b == pg.get()) {
      // Committed without the flush, yet committed: another process reads them before any sync.
      BOOST_TEST(other->read_log("s").events.size() == std::size_t(w.next_seq()));
    }
    w.sync();
    auto turn2 = batches(2);
    w.append(std::move(turn2[0]), false);
    w.append(std::move(turn2[1]), true);
    w.append(std::move(turn2[2]), false);
    w.release();
  }
  BOOST_TEST((exported(*pg, "s") == file_lines(*files->find_log("s"))));
  BOOST_TEST((pg->read_log("s").events == files->read_log("s").events));
  BOOST_TEST((stored_seqs(db, "s") == iota(2 * 2503)));
}

BOOST_AUTO_TEST_CASE(sync_says_so_when_unsynced_batches_cannot_be_made_durable) {
  Db db;
  auto pg = db.store(db.alice);
  auto w = pg->create(header("gone"));
  w.append({ev("turn/start", {{"turn", 1}}, 1)}, /*sync=*/true);
  w.append({ev("user/message", {{"turn", 1}, {"content", text("q")}}, 2, true)}, /*sync=*/false);
  db.exec("DELETE FROM dsh_acp.sessions WHERE id = 'gone'");  // behind the writer's back
  const std::string why = message_of<StoreError>([&] { w.sync(); });
  BOOST_TEST(why.find("could not be made durable") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_log_changed_under_the_writer_fails_the_batch) {
  Db db;
  auto pg = db.store(db.alice);
  auto w = pg->create(header("s"));
  write_batches(w, turn(1));
  // Somebody bypassing the lock adds an event.
  db.exec("INSERT INTO dsh_acp.events SELECT id, event_count, 'x', 0, '{}' FROM dsh_acp.sessions WHERE id = 's'");
  db.exec("UPDATE dsh_acp.sessions SET event_count = event_count + 1 WHERE id = 's'");
  const std::string what = message_of<StoreError>([&] { write_batches(w, turn(2)); });
  BOOST_TEST(what.find("log changed under the writer") != std::string::npos, what);
  BOOST_TEST(db.value("SELECT count(*) FROM dsh_acp.events WHERE session_id = 's'") ==
             db.value("SELECT event_count FROM dsh_acp.sessions WHERE id = 's'"));
}

BOOST_AUTO_TEST_CASE(a_killed_connection_fails_the_batch_whole_releases_the_lock_and_the_next_open_works) {
  Db db;
  auto pg = db.store(db.alice);
  auto w = pg->create(header("s"));
  write_batches(w, turn(1));
  const auto before = stored_seqs(db, "s");
  BOOST_TEST(db.kill_lock_holders(db.alice) == 1);
  const std::string what = message_of<StoreError>([&] { write_batches(w, turn(2)); });
  BOOST_TEST(what.find("PostgreSQL store " + pg->name()) == 0u, what);
  BOOST_TEST(what.find("connection lost") != std::string::npos, what);
  BOOST_TEST((stored_seqs(db, "s") == before));
  BOOST_CHECK_THROW(w.append({ev("turn/start", {{"turn", 9}}, 1)}), StoreError);  // the lock is gone with it
  // Another writer gets the session at once: the lock died with the backend.
  auto other = db.store(db.alice);
  auto w2 = other->open("s", LockWait{false, std::nullopt, {}});
  BOOST_TEST(w2.next_seq() == std::int64_t(before.size()));
  write_batches(w2, turn(2, true, 9000));
  BOOST_TEST((stored_seqs(db, "s") == iota(w2.next_seq())));
  w2.release();
  w.release();
  // The first store's pool recovers from the killed connection on its own.
  auto w3 = pg->open("s");
  BOOST_TEST(w3.last_turn() == 2);
}

BOOST_AUTO_TEST_CASE(idle_connections_killed_under_the_pool_are_replaced) {
  Db db;
  auto pg = db.store(db.alice);
  { auto w = pg->create(header("s")); write_batches(w, turn(1)); }
  BOOST_TEST(pg->list_sessions().size() == 1u);
  // With a timeout, pg_terminate_backend returns once each backend has ended: gone for the server
  // before the store is asked again (each has told its client by then).
  db.value("SELECT count(pg_terminate_backend(pid, 600000)) FROM pg_stat_activity WHERE usename = '" + db.alice + "'");
  BOOST_TEST(pg->list_sessions().size() == 1u);
  BOOST_TEST(pg->read_log("s").events.size() == 10u);
}

// A server that refuses connections for a while (the role may not log in: to the pool as a server
// restarting) and then takes them again: the first call after that connects, even within the
// reconnect backoff of the attempt that failed just before it.
BOOST_AUTO_TEST_CASE(the_first_call_after_the_server_takes_connections_again_connects) {
  Db db;
  auto pg = db.store(db.alice);
  { auto w = pg->create(header("s")); write_batches(w, turn(1)); }
  struct Login {
    Db& db;
    ~Login() { db.exec("ALTER ROLE " + db.alice + " LOGIN"); }
  } restore{db};
  // The listener connects on its own thread: one still logging in when the role loses LOGIN would
  // get past both the refusal and pg_terminate_backend (a backend not yet signed in is not listed
  // under its role), and live on.
  BOOST_TEST_REQUIRE(pg->wait_listening(std::chrono::hours(1)));
  // The indexer's likewise: it connects when the turn's texts are indexed, and not again without more.
  BOOST_TEST_REQUIRE(pg->wait_indexed(std::chrono::hours(1)));
  db.exec("ALTER ROLE " + db.alice + " NOLOGIN");
  db.value("SELECT count(pg_terminate_backend(pid, 600000)) FROM pg_stat_activity WHERE usename = '" + db.alice + "'");
  // And the store's listener has noticed (else the listing could come from memory).
  while (pg->wait_listening(milliseconds(0))) std::this_thread::sleep_for(milliseconds(5));
  const std::string refused = message_of<PgError>([&] { pg->list_sessions(); });
  BOOST_TEST(refused.find("PostgreSQL store " + pg->name() + ": ") == 0u, refused);
  db.exec("ALTER ROLE " + db.alice + " LOGIN");
  BOOST_TEST(pg->list_sessions().size() == 1u);
  BOOST_TEST(pg->read_log("s").events.size() == 10u);
}

// More threads than pooled connections: readers wait for one, writers own theirs.
BOOST_AUTO_TEST_CASE(threads_share_one_store) {
  Db db;
  PgStoreOptions o;
  o.url = db.url(db.alice);
  o.pool_size = 2;
  PgStore pg(o);
  std::vector<std::future<std::size_t>> done;
  for (int t = 0; t < 8; ++t)
    done.push_back(std::async(std::launch::async, [&pg, t] {
      const std::string id = "t" + std::to_string(t);
      {
        auto w = pg.create(header(id, "/w", 1000 + t));
        for (int n = 1; n <= 3; ++n) write_batches(w, turn(n, true, 5000 * n));
      }
      std::size_t seen = 0;
      for (int i = 0; i < 5; ++i) seen = pg.list_sessions().size() + pg.read_log(id).events.size();
      return seen;
    }));
  for (auto& f : done) BOOST_TEST(f.get() >= 29u);  // its own 28 events and at least itself listed
  BOOST_TEST(pg.list_sessions().size() == 8u);
  for (int t = 0; t < 8; ++t) BOOST_TEST((stored_seqs(db, "t" + std::to_string(t)) == iota(28)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_locks)

// Waiters for a session's lock in the test database.
int lock_waiters(Db& db) { return std::stoi(db.lock_waiters()); }

// A writer's release() ends its lock's transaction without waiting for it: until the server has
// read it, the lock is still held. True once no session lock of this database is held.
bool unlocked(Db& db, const std::string& user = "") {
  while (db.lock_holders(user) != "0") std::this_thread::sleep_for(milliseconds(1));
  return true;
}

BOOST_AUTO_TEST_CASE(a_second_writer_is_busy_after_the_lock_timeout_or_at_once_without_waiting) {
  Db db;
  auto one = db.store(db.alice, Generation::flat, milliseconds(500));
  auto two = db.store(db.alice, Generation::flat, milliseconds(500));
  auto w = one->create(header("s"));
  write_batches(w, turn(1));
  auto t0 = steady_clock::now();
  BOOST_CHECK_THROW(two->open("s"), SessionBusy);
  BOOST_TEST(duration_cast<milliseconds>(steady_clock::now() - t0).count() >= 450);
  BOOST_CHECK_THROW(two->create(header("s")), SessionBusy);
  BOOST_CHECK_THROW(two->delete_session("s", LockWait{false, std::nullopt, {}}), SessionBusy);
  BOOST_CHECK_THROW(one->open("s", LockWait{false, std::nullopt, {}}), SessionBusy);  // one store, two writers
  // Queued for longer than the timeout already: one try only.
  BOOST_CHECK_THROW(two->open("s", LockWait{true, steady_clock::now() - seconds(10), {}}), SessionBusy);
  w.release();
  BOOST_TEST_REQUIRE(unlocked(db));
  auto w2 = two->open("s", LockWait{false, std::nullopt, {}});
  BOOST_TEST(w2.next_seq() == 10);
}

BOOST_AUTO_TEST_CASE(a_stop_ends_a_lock_wait) {
  Db db;
  auto one = db.store(db.alice);
  auto two = db.store(db.alice, Generation::flat, milliseconds(600000));  // never reached
  auto w = one->create(header("s"));
  write_batches(w, turn(1));
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] {
    try {
      two->open("s", LockWait{true, std::nullopt, stop.get_token()});
      return std::string("locked");
    } catch (const SessionBusy&) {
      return std::string("busy");
    }
  });
  // The waiter is queued on the lock in the server before the stop (the cancel path, not the
  // check before waiting).
  while (lock_waiters(db) == 0) std::this_thread::sleep_for(milliseconds(5));
  stop.request_stop();
  BOOST_TEST(waiting.get() == "busy");
  BOOST_TEST(lock_waiters(db) == 0);
  BOOST_CHECK_THROW(two->open("s", LockWait{true, std::nullopt, stop.get_token()}), SessionBusy);
  w.release();
  BOOST_TEST_REQUIRE(unlocked(db));
  // A stop ends only a wait: a lock no one holds is still taken, as the file lock is (a prompt
  // cancelled as it arrives still logs its message).
  BOOST_CHECK_NO_THROW(two->open("s", LockWait{true, std::nullopt, stop.get_token()}));
  BOOST_CHECK_NO_THROW(two->open("s", LockWait{false, std::nullopt, stop.get_token()}));
  BOOST_CHECK_NO_THROW(two->open("s"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_listing)

BOOST_AUTO_TEST_CASE(newest_first_ties_in_en_us_collation_keyset_cursor_and_cwd_filter_as_the_file_store) {
  Db db;
  TempDir dir;
  auto files = file_store(dir, Generation::flat);
  auto pg = db.store(db.alice);
  // Ties at 2000 whose en-US order differs from byte order ("a" < "B" < "c", "_x" first).
  struct S {
    std::string id;
    std::optional<std::string> cwd;
    std::int64_t created;
  };
  const std::vector<S> sessions{{"B", "/w/p", 2000},      {"a", "/w/p/", 2000},   {"c", "/w/q", 2000},
                                {"_x", std::nullopt, 2000}, {"old", "/w/p/./", 1000}, {"new", "/w/q", 3000},
                                {"A", "/w/p", 2000}};
  for (const auto& s : sessions)
    for (Backend* b : {static_cast<Backend*>(files.get()), static_cast<Backend*>(pg.get())}) {
      auto w = b->create(header(s.id, s.cwd, s.created));
      w.append({ev("turn/start", {{"turn", 1}}, s.created + 1)});
    }
  auto ids = [](const std::vector<SessionListing>& rows) {
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r.header.id);
    return out;
  };
  const std::vector<std::string> all = ids(pg->list_sessions());
  BOOST_TEST((all == std::vector<std::string>{"new", "_x", "a", "A", "B", "c", "old"}));
  BOOST_TEST((all == ids(files->list_sessions())));
  // Pages of two through the keyset cursor give the whole list, once.
  std::vector<std::string> paged;
  ListQuery q;
  q.limit = 2;
  for (;;) {
    auto page = pg->list_sessions(q);
    for (const auto& r : page) paged.push_back(r.header.id);
    if (page.size() < 2) break;
    q.after = std::make_pair(page.back().header.createdAt, page.back().header.id);
  }
  BOOST_TEST((paged == all));
  ListQuery by_cwd;
  by_cwd.cwd = "/w/p/";
  BOOST_TEST((ids(pg->list_sessions(by_cwd)) == std::vector<std::string>{"a", "A", "B", "old"}));
  BOOST_TEST((ids(pg->list_sessions(by_cwd)) == ids(files->list_sessions(by_cwd))));
  ListQuery with_cwd;
  with_cwd.with_cwd_only = true;
  BOOST_TEST((ids(pg->list_sessions(with_cwd)) == ids(files->list_sessions(with_cwd))));
  BOOST_TEST(ids(pg->list_sessions(with_cwd)).size() == all.size() - 1);
  ListQuery after_tie;
  after_tie.after = std::make_pair(std::int64_t(2000), std::string("a"));
  BOOST_TEST((ids(pg->list_sessions(after_tie)) == ids(files->list_sessions(after_tie))));
}

BOOST_AUTO_TEST_CASE(another_process_change_reaches_a_repeated_listing_through_notify) {
  Db db;
  auto a = db.store(db.alice), b = db.store(db.alice), bob = db.store(db.bob);
  BOOST_TEST_REQUIRE(a->wait_listening(kListening));
  BOOST_TEST(!lists(*a, "s1"));
  BOOST_TEST(!lists(*a, "s1"));  // the page again, while nothing changed
  {
    auto w = b->create(header("s1"));
    w.append({ev("turn/start", {{"turn", 1}}, 1)}, true);
  }
  BOOST_TEST(listing_shows(*a, "s1"));
  // A title set by the other process shows too (an update, not a new row).
  {
    auto w = b->open("s1");
    w.append({ev("session/title", {{"title", "Renamed"}, {"messageSeqs", json::array{}}, {"source", {{"kind", "user"}}}}, 2)},
             true);
  }
  std::optional<std::string> title;
  while (title != "Renamed") title = a->list_sessions().at(0).title;
  BOOST_TEST((title == std::optional<std::string>("Renamed")));
  // Someone else's session shared and unshared; deleted by the other process.
  {
    auto w = bob->create(header("bobs"));
    w.append({ev("turn/start", {{"turn", 1}}, 1)}, true);
  }
  BOOST_TEST(!lists(*a, "bobs"));
  bob->set_shared("bobs", true);
  BOOST_TEST(listing_shows(*a, "bobs"));
  bob->set_shared("bobs", false);
  BOOST_TEST(listing_shows(*a, "bobs", false));
  b->delete_session("s1");
  BOOST_TEST(listing_shows(*a, "s1", false));
}

NewEvent titled(const std::string& title, std::int64_t time) {
  return ev("session/title", {{"title", title}, {"messageSeqs", json::array{}}, {"source", {{"kind", "user"}}}}, time);
}

BOOST_AUTO_TEST_CASE(streaming_batches_are_announced_by_the_durable_commit_after_them_or_the_release) {
  Db db;
  auto b = db.store(db.alice), a = db.store(db.alice);
  BOOST_TEST_REQUIRE(a->wait_listening(kListening));
  pg_test::Announcements heard(PgConnection::connect(db.url("postgres")));
  {
    auto w = b->create(header("s1"));
    w.append({titled("one", 1)}, false);
    BOOST_TEST(heard.since() == 1);  // a new session always is
    w.append({titled("two", 2)}, false);
    w.append({titled("three", 3)}, false);
    BOOST_TEST(heard.since() == 0);
    w.append({titled("four", 4)}, true);
    BOOST_TEST(heard.since() == 1);
    // The first unsynced batch after a durable commit announces itself (a turn's start shows
    // elsewhere even if the writer dies mid-turn), the ones after it do not.
    w.append({titled("five", 5)}, false);
    BOOST_TEST(heard.since() == 1);
    w.append({titled("six", 6)}, false);
    BOOST_TEST(heard.since() == 0);
    w.sync();
    BOOST_TEST(heard.since() == 1);
    w.sync();  // nothing left to flush
    BOOST_TEST(heard.since() == 0);
    w.append({titled("seven", 7)}, false);
    w.append({titled("eight", 8)}, false);
    BOOST_TEST(heard.since() == 1);
  }  // let go without a sync: its release announces "eight"
  BOOST_TEST(heard.arrives());
  std::optional<std::string> title;
  while (title != "eight") title = a->list_sessions().at(0).title;
  BOOST_TEST((title == std::optional<std::string>("eight")));
  {
    auto w = b->open("s1");  // claiming and loading change nothing
    BOOST_TEST(heard.since() == 0);
  }
  BOOST_TEST(b->read_log("s1").events.size() == 8u);
}

BOOST_AUTO_TEST_CASE(a_writers_connection_goes_back_to_the_pool_without_its_lock) {
  Db db;
  PgStoreOptions o;
  o.url = db.url(db.alice);
  o.pool_size = 1;
  PgStore s(o);
  {
    auto w = s.create(header("s1"));
    write_batches(w, turn(1));
  }
  for (int i = 0; i < 3; ++i) {
    {
      auto w = s.open("s1");
      BOOST_TEST(db.lock_holders() == "1");
    }
    // The release went without waiting for its answer; a reader on the same connection reads it first.
    BOOST_TEST(s.read_log("s1").events.size() == 10u);
    BOOST_TEST(db.lock_holders() == "0");
  }
  // A writer whose lock connection the server ended: its release's answer is an error, so the
  // connection is made anew before the next use, and the next writer gets the lock.
  {
    auto w = s.open("s1");
    db.exec("SELECT pg_terminate_backend(pid, 60000)" + std::string(Db::kLockers));
  }
  auto w = s.open("s1");
  BOOST_TEST(db.lock_holders() == "1");
}

BOOST_AUTO_TEST_CASE(a_lost_listener_connection_relists_when_it_comes_back) {
  Db db;
  auto a = db.store(db.alice), b = db.store(db.bob);
  BOOST_TEST_REQUIRE(a->wait_listening(kListening));
  BOOST_TEST(!lists(*a, "after"));
  BOOST_TEST(!lists(*a, "after"));
  const std::string listeners = "FROM pg_stat_activity WHERE application_name = 'dsh-acp listener' AND usename = '" +
                                db.alice + "' AND datname = '" + db.name + "'";
  const std::string old_pid = db.value("SELECT min(pid) " + listeners);
  // The listener's connection ends, and a change is made that it never hears of.
  BOOST_TEST(db.value("SELECT count(pg_terminate_backend(pid)) " + listeners) == "1");
  {
    auto w = b->create(header("after"));
    w.append({ev("turn/start", {{"turn", 1}}, 1)}, true);
  }
  b->set_shared("after", true);
  BOOST_TEST(listing_shows(*a, "after"));
  // And it is back, on a new connection.
  std::string pid;
  while ((pid = db.value("SELECT coalesce(min(pid)::text, '') " + listeners)).empty() || pid == old_pid)
    std::this_thread::sleep_for(milliseconds(5));
  BOOST_TEST(!pid.empty());
  BOOST_TEST(pid != old_pid);
  BOOST_TEST_REQUIRE(a->wait_listening(kListening));
  b->set_shared("after", false);
  BOOST_TEST(listing_shows(*a, "after", false));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_people)

BOOST_AUTO_TEST_CASE(a_person_sees_only_their_own_and_shared_sessions_and_writes_only_their_own) {
  Db db;
  auto alice = db.store(db.alice);
  auto bob = db.store(db.bob);
  BOOST_TEST(alice->role() == db.alice);
  {
    auto w = alice->create(header("plans"));
    write_batches(w, turn(1));
  }
  // Unshared: for bob it does not exist, exactly as an id nobody has.
  BOOST_TEST(!bob->find_log("plans"));
  BOOST_TEST(bob->list_sessions().empty());
  BOOST_CHECK_THROW(bob->read_log("plans"), SessionNotFound);
  BOOST_TEST(message_of<SessionNotFound>([&] { bob->open("plans"); }) == std::string(SessionNotFound("plans").what()));
  BOOST_CHECK_THROW(bob->set_shared("plans", true), SessionNotFound);
  BOOST_CHECK_THROW(bob->delete_session("plans"), SessionNotFound);
  {
    // Ids are unique per owner: bob may keep a "plans" of his own, and learns nothing of alice's.
    auto w = bob->create(header("plans"));
    BOOST_CHECK_NO_THROW(w.append({ev("turn/start", {{"turn", 1}}, 1)}));
  }
  BOOST_TEST(bob->read_log("plans").events.size() == 1u);
  BOOST_TEST(alice->read_log("plans").events.size() == 10u);
  bob->delete_session("plans");
  BOOST_TEST(alice->read_log("plans").events.size() == 10u);
  alice->set_shared("plans", true);
  BOOST_TEST(bob->find_log("plans").has_value());
  // Bob's listing hears of it through NOTIFY, a moment after the commit.
  BOOST_TEST(listing_shows(*bob, "plans"));
  auto rows = bob->list_sessions();
  BOOST_TEST_REQUIRE(rows.size() == 1u);
  BOOST_TEST((rows[0].owner == db.alice));
  BOOST_TEST(rows[0].shared);
  BOOST_TEST((bob->read_log("plans").events == alice->read_log("plans").events));
  const std::string why = message_of<SessionReadOnly>([&] { bob->open("plans"); });
  BOOST_TEST(why.find("it belongs to " + db.alice) != std::string::npos, why);
  BOOST_CHECK_THROW(bob->delete_session("plans"), SessionReadOnly);
  BOOST_CHECK_THROW(bob->set_shared("plans", false), SessionReadOnly);
  BOOST_CHECK_THROW(bob->import_lines("plans", Generation::flat, "", 10, {}), SessionReadOnly);
  // Bob's own sessions stay his.
  {
    auto w = bob->create(header("bobs", "/b", 500));
    write_batches(w, turn(1));
  }
  BOOST_TEST(!alice->find_log("bobs"));
  BOOST_TEST(bob->list_sessions().size() == 2u);
  alice->set_shared("plans", false);
  BOOST_TEST(!bob->find_log("plans"));
  BOOST_TEST(listing_shows(*bob, "plans", false));
  BOOST_TEST(bob->list_sessions().size() == 1u);
}

// Bob, in psql, does what he can against alice's lock: takes version 3's advisory key for her
// session (and every key alice's connections hold, read from pg_locks), and tries to lock, update or
// delete the rows of session_locks. Alice's writers never find her session busy, and never wait.
BOOST_AUTO_TEST_CASE(another_role_cannot_take_or_delay_a_writers_lock) {
  Db db;
  auto alice = db.store(db.alice);
  {
    auto w = alice->create(header("s"));
    write_batches(w, turn(1));
  }
  PgConnection bob = PgConnection::connect(db.url(db.bob));
  bob.exec("SET lock_timeout = '100ms'");
  BOOST_TEST(bob.exec("SELECT pg_try_advisory_lock(hashtextextended('dsh-acp:' || 's', 0))").value(0, 0) == "t");
  Transaction bobs(bob);
  BOOST_TEST(bob.exec("SELECT true FROM dsh_acp.session_locks FOR UPDATE").rows() == 0);
  BOOST_TEST(bob.exec("UPDATE dsh_acp.session_locks SET id = id").affected() == 0);
  BOOST_TEST(bob.exec("DELETE FROM dsh_acp.session_locks").affected() == 0);
  const LockWait at_once{false, std::nullopt, {}};
  for (int i = 2; i < 5; ++i) {
    auto w = alice->open("s", at_once);
    // While alice writes: every lock her connections hold, taken by bob too (advisory: at once;
    // rows: none he can see), and her row asked for by name.
    PgResult keys = bob.exec("SELECT DISTINCT (classid::bigint << 32) | objid::bigint FROM pg_locks "
                             "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()");
    for (int k = 0; k < keys.rows(); ++k) bob.exec("SELECT pg_try_advisory_lock($1::bigint)", {keys.value(k, 0)});
    BOOST_TEST(bob.exec("SELECT true FROM dsh_acp.session_locks WHERE owner = $1 AND id = 's' FOR UPDATE", {db.alice})
                   .rows() == 0);
    write_batches(w, turn(i, true, 5000 + 100 * i));
    w.release();
    BOOST_TEST_REQUIRE(pg_store_locks::unlocked(db, db.alice));  // bob's FOR UPDATE of no rows counts too
  }
  // And the session is still alice's alone, whole.
  BOOST_TEST(alice->read_log("s").events.size() == 37u);
  BOOST_TEST(db.lock_waiters() == "0");
}

// Ids are unique per owner: nothing bob does through dsh-acp or psql tells him whether alice keeps
// an unshared session of some id. An id names bob's own session first; a shared one of the same id
// shows only where he has none.
BOOST_AUTO_TEST_CASE(no_role_learns_whether_another_keeps_an_unshared_session) {
  Db db;
  auto alice = db.store(db.alice);
  auto bob = db.store(db.bob);
  for (const char* id : {"x", "y"}) {
    auto w = alice->create(header(id));
    write_batches(w, turn(1));
  }
  // Through dsh-acp: creating, and copying in (store copy's import), as for an unused id.
  {
    auto w = bob->create(header("x", "/b", 2000));
    w.append({ev("turn/start", {{"turn", 1}}, 1)});
  }
  const std::vector<std::string> lines = exported(*alice, "y");
  BOOST_CHECK_NO_THROW(bob->import_lines("y", Generation::flat, lines[0],
                                         0, std::vector<std::string>(lines.begin() + 1, lines.end())));
  // Through psql: the same insert an unused id takes.
  PgConnection psql = PgConnection::connect(db.url(db.bob));
  psql.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at)"
            " VALUES ('x2', '45fc', '{}', 1, 1), ('y2', '45fc', '{}', 1, 1)");
  BOOST_TEST(bob->read_log("x").events.size() == 1u);
  BOOST_TEST(bob->read_log("y").events.size() == 10u);
  BOOST_TEST(alice->read_log("x").events.size() == 10u);
  BOOST_TEST(alice->list_sessions().size() == 2u);
  for (const auto& row : alice->list_sessions()) BOOST_TEST((row.owner == db.alice));
  // Alice shares "x" and "y": bob still sees his own under those ids, once each.
  alice->set_shared("x", true);
  alice->set_shared("y", true);
  BOOST_TEST(bob->read_log("x").events.size() == 1u);
  BOOST_TEST_REQUIRE(bob->list_sessions().size() == 4u);  // x, y, x2, y2: his
  for (const auto& row : bob->list_sessions()) BOOST_TEST((row.owner == db.bob));
  BOOST_CHECK_NO_THROW(bob->open("x"));  // his, writable
  // Once he deletes his, alice's shared one is what the id names for him: read-only.
  bob->delete_session("x");
  BOOST_TEST(alice->read_log("x").events.size() == 10u);
  BOOST_TEST(bob->read_log("x").events.size() == 10u);
  BOOST_CHECK_THROW(bob->open("x"), SessionReadOnly);
  // A shared session bob can see is his to know of: taking its id is refused.
  BOOST_CHECK_THROW(bob->create(header("x")), SessionExists);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_copy)

BOOST_AUTO_TEST_CASE(export_then_import_is_byte_identical_in_both_generations) {
  Db db;
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << acp::store::generation_name(g)) {
      // The lines of a file log, imported into PostgreSQL and exported again.
      TempDir dir;
      auto files = file_store(dir, g);
      const std::string id = "copied-" + std::string(acp::store::generation_name(g));
      {
        auto w = files->create(header(id));
        write_batches(w, turn(1));
        write_batches(w, turn(2, true, 9000));
      }
      const std::vector<std::string> text = file_lines(*files->find_log(id));
      auto pg = db.store(db.alice);  // its own shape is 45fc: imports keep theirs
      std::vector<std::string> first(text.begin() + 1, text.begin() + 6), rest(text.begin() + 6, text.end());
      pg->import_lines(id, g, text[0], 0, first);
      BOOST_CHECK_THROW(pg->import_lines(id, g, text[0], 0, first), SessionExists);
      BOOST_CHECK_THROW(pg->import_lines(id, g, "", 4, rest), StoreError);  // not where the log ends
      const Generation other = g == Generation::flat ? Generation::project_dirs : Generation::flat;
      BOOST_CHECK_THROW(pg->import_lines(id, other, "", 5, rest), StoreError);
      pg->import_lines(id, g, "", 5, rest);
      Generation shape;
      BOOST_TEST((exported(*pg, id, &shape) == text));
      BOOST_TEST((shape == g));
      BOOST_TEST((pg->read_log(id).events == files->read_log(id).events));
      // From a seq on.
      std::vector<std::string> tail;
      pg->export_lines(id, {}, [&](std::string_view l) { tail.emplace_back(l); }, 7);
      BOOST_TEST((tail == std::vector<std::string>(text.begin() + 8, text.end())));
      // Written on after the import, in the session's own shape.
      {
        auto w = pg->open(id);
        write_batches(w, turn(3, true, 12000));
        auto f = files->open(id);
        write_batches(f, turn(3, true, 12000));
      }
      BOOST_TEST((exported(*pg, id) == file_lines(*files->find_log(id))));
      // And back into an empty place: the same bytes again.
      const auto all = exported(*pg, id);
      pg->delete_session(id);
      pg->import_lines(id, g, all[0], 0, std::vector<std::string>(all.begin() + 1, all.end()));
      BOOST_TEST((exported(*pg, id) == all));
    }
  }
}

BOOST_AUTO_TEST_CASE(import_refuses_lines_that_do_not_parse_or_continue_the_seqs) {
  Db db;
  auto pg = db.store(db.alice);
  TempDir dir;
  auto files = file_store(dir, Generation::flat);
  {
    auto w = files->create(header("x"));
    write_batches(w, turn(1));
  }
  std::vector<std::string> text = file_lines(*files->find_log("x"));
  std::vector<std::string> skipping{text[1], text[3]};
  BOOST_CHECK_THROW(pg->import_lines("x", Generation::flat, text[0], 0, skipping), InvalidBatch);
  BOOST_CHECK_THROW(pg->import_lines("x", Generation::flat, text[0], 0, {text[1], "{\"type\":"}), InvalidBatch);
  BOOST_CHECK_THROW(pg->import_lines("x", Generation::flat, text[0], 0, {text[1] + "\n" + text[2]}), InvalidBatch);
  BOOST_CHECK_THROW(pg->import_lines("y", Generation::flat, text[0], 0, {}), InvalidBatch);  // header of another id
  BOOST_TEST(!pg->find_log("x"));  // nothing of a refused import
  pg->import_lines("x", Generation::flat, text[0], 0, std::vector<std::string>(text.begin() + 1, text.end()));
  BOOST_TEST((exported(*pg, "x") == text));
}

// One check (store/import_check.hpp) for every backend: each bad import is refused by a file root
// and by PostgreSQL with the same InvalidBatch and the same words, and neither keeps anything of it.
BOOST_AUTO_TEST_CASE(a_bad_import_is_refused_alike_by_both_backends) {
  Db db;
  TempDir src_dir, dst_dir;
  auto src = file_store(src_dir, Generation::flat);
  for (const char* id : {"x", "c"}) {
    auto w = src->create(header(id));
    write_batches(w, turn(1));
    write_batches(w, turn(2, true, 9000));
  }
  const std::vector<std::string> text = file_lines(*src->find_log("x"));
  BOOST_TEST_REQUIRE(text.size() > 8u);
  const std::string& head = text[0];
  // "c" holds seqs 0..3 in both, to be continued.
  const std::vector<std::string> c_text = file_lines(*src->find_log("c"));
  auto files = file_store(dst_dir, Generation::flat);
  auto pg = db.store(db.alice);
  for (Backend* b : std::initializer_list<Backend*>{files.get(), pg.get()})
    b->import_lines("c", Generation::flat, c_text[0], 0, {c_text.begin() + 1, c_text.begin() + 5});

  struct Bad {
    std::string what, id, header;
    std::int64_t first_seq;
    std::vector<std::string> lines;
  };
  std::string retired = head;
  retired.insert(retired.rfind('}'), R"(,"sandboxMode":"x")");
  std::string relative = head;
  relative.replace(relative.find("/work/project"), 13, "work/project");
  const std::vector<Bad> bad{
      {"a seq gap", "x", head, 0, {text[1], text[3]}},
      {"a line that is no JSON", "x", head, 0, {text[1], "{\"type\":"}},
      {"a record without a seq", "x", head, 0, {text[1], R"({"type":"x","time":1})"}},
      {"a line break inside a line", "x", head, 0, {text[1] + "\n" + text[2]}},
      {"bytes that are not UTF-8", "x", head, 0, {text[1], text[2] + "\xC0\xAF"}},
      {"a legacy event", "x", head, 0, {text[1], R"({"type":"mode/set","seq":1,"time":1,"data":{}})"}},
      {"a header of another session", "y", head, 0, {}},
      {"a header that is none", "x", R"({"type":"session"})", 0, {}},
      {"a header with retired fields", "x", retired, 0, {}},
      {"a relative cwd", "x", relative, 0, {}},
      {"a negative first seq", "x", head, -1, {}},
      {"a continuation before the end", "c", "", 3, {c_text[4]}},
      {"a continuation after the end", "c", "", 5, {c_text[6]}},
      {"a continuation whose seqs do not follow", "c", "", 4, {c_text[6]}},
  };
  for (const Bad& t : bad) {
    BOOST_TEST_CONTEXT(t.what) {
      std::vector<std::string> said;
      for (Backend* b : std::initializer_list<Backend*>{files.get(), pg.get()}) {
        try {
          b->import_lines(t.id, Generation::flat, t.header, t.first_seq, t.lines);
          BOOST_ERROR(b->name() << " took it");
        } catch (const InvalidBatch& e) {
          said.emplace_back(e.what());
        }
      }
      BOOST_TEST_REQUIRE(said.size() == 2u);
      BOOST_TEST(said[0] == said[1]);
      BOOST_TEST(said[0].find("session \"" + t.id + "\"") != std::string::npos, said[0]);
    }
  }
  for (Backend* b : std::initializer_list<Backend*>{files.get(), pg.get()}) {
    BOOST_TEST(!b->exists("x"));
    BOOST_TEST(!b->exists("y"));
    BOOST_TEST(b->read_log("c").events.size() == 4u);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_repair)

BOOST_AUTO_TEST_CASE(a_turn_left_open_is_closed_as_file_repair_closes_it) {
  Db db;
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    BOOST_TEST_CONTEXT("generation " << acp::store::generation_name(g)) {
      TempDir dir;
      auto files = file_store(dir, g);
      auto pg = db.store(db.alice, g);
      const std::string id = "crashed-" + std::string(acp::store::generation_name(g));
      for (Backend* b : {static_cast<Backend*>(files.get()), static_cast<Backend*>(pg.get())}) {
        auto w = b->create(header(id));
        write_batches(w, turn(1));
        write_batches(w, turn(2, false, 9000));  // the writer dies after the tool call
      }
      // The pg writer died with its process: its connection is gone (lock included).
      // A second process (another store, no cache) opens the session: repaired on open.
      auto later = db.store(db.alice, g);
      auto w = later->open(id);
      auto f = files->open(id);
      BOOST_TEST(!w.turn_open());
      BOOST_TEST(w.next_seq() == f.next_seq());
      BOOST_TEST((exported(*later, id) == file_lines(*files->find_log(id))));
      BOOST_TEST((later->read_log(id).events == files->read_log(id).events));
      write_batches(w, turn(3, true, 12000));
      BOOST_TEST((stored_seqs(db, id) == iota(w.next_seq())));
    }
  }
}

BOOST_AUTO_TEST_CASE(an_open_sees_what_other_writers_added_since_its_last_write) {
  Db db;
  auto one = db.store(db.alice);
  auto two = db.store(db.alice);
  {
    auto w = one->create(header("s"));
    write_batches(w, turn(1));
  }
  {
    auto w = two->open("s");
    write_batches(w, turn(2, true, 9000));
  }
  auto w = one->open("s");  // its cache knows turn 1 only
  BOOST_TEST(w.last_turn() == 2);
  BOOST_TEST(w.next_seq() == 19);
  BOOST_TEST((w.title() && w.title()->title == "Title 1"));
  write_batches(w, turn(3, true, 12000));
  BOOST_TEST((stored_seqs(db, "s") == iota(28)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_store_setup)

BOOST_AUTO_TEST_CASE(start_up_errors_name_the_store_without_its_password) {
  Db db;
  PgStoreOptions o;
  o.url = url_as("postgres", "no_such_db_" + std::to_string(::getpid()));
  o.url.insert(o.url.find("://") + 3 + std::string("postgres").size(), ":secret");
  const std::string what = message_of<StoreError>([&] { PgStore s(o); });
  BOOST_TEST(what.find("secret") == std::string::npos, what);
  BOOST_TEST(what.find("PostgreSQL store postgresql://postgres:***@") == 0u, what);
  // A database without the schema.
  o.url = url_as("postgres", "postgres");
  BOOST_CHECK_THROW(PgStore{o}, SchemaMissing);
}

BOOST_AUTO_TEST_SUITE_END()
