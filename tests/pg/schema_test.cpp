// The dsh_acp schema against a real PostgreSQL: migrate (idempotent), check_schema's start-up
// errors, the NOTIFY trigger, the session lock rows, and row-level security between two people.
#include "scratch_db.hpp"

#include "store/pg/connection.hpp"
#include "store/pg/schema.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>


using namespace acp::store::pg;

namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  BOOST_FAIL("expected " << typeid(E).name());
  return {};
}

std::string sqlstate_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const PgError& e) {
    return e.sqlstate();
  }
  return "no error";
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

/// A session row with only the required columns, as the connected role.
void insert_session(PgConnection& c, const std::string& id) {
  c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at)"
         " VALUES ($1, '0.1', $2, 1700000000000, 1700000000000)",
         {id, "{\"type\":\"session\",\"id\":\"" + id + "\"}"});
}

void insert_event(PgConnection& c, const std::string& id, int seq) {
  std::string s = std::to_string(seq);
  c.exec("INSERT INTO dsh_acp.events (session_id, seq, type, time, line) VALUES ($1, $2, 'user', 1, $3)",
         {id, s, "{\"seq\":" + s + "}"});
}

using pg_test::wait_notifications;

PgConnection migrated(const pg_test::ScratchDb& db) {
  PgConnection c = db.connect();
  migrate(c);
  return c;
}

/// A migrated database with two people in it, each connected as themselves.
struct People {
  pg_test::ScratchDb db;
  PgConnection super = migrated(db);
  std::string alice_role = pg_test::ensure_person(super, "alice");
  std::string bob_role = pg_test::ensure_person(super, "bob");
  PgConnection alice = db.connect(alice_role);
  PgConnection bob = db.connect(bob_role);
};

} // namespace

BOOST_AUTO_TEST_SUITE(pg_schema)

BOOST_AUTO_TEST_CASE(migrate_creates_the_schema_and_is_idempotent) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  BOOST_TEST(!schema_version(c).has_value());
  std::string missing = message_of<SchemaMissing>([&] { check_schema(c); });
  BOOST_TEST(contains(missing, "run `dsh-acp store migrate " + c.name() + "`"), missing);

  migrate(c);
  BOOST_TEST(schema_version(c).value_or(-1) == kSchemaVersion);
  check_schema(c);
  migrate(c);  // again: nothing to do, nothing fails
  BOOST_TEST(schema_version(c).value_or(-1) == kSchemaVersion);
  BOOST_TEST(c.exec("SELECT count(*) FROM dsh_acp.meta").int64(0, 0) == 1);
  PgResult tables = c.exec("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class c"
                           " JOIN pg_namespace n ON n.oid = c.relnamespace"
                           " WHERE n.nspname = 'dsh_acp' AND relkind = 'r'");
  BOOST_TEST(tables.value(0, 0) == "events,meta,search,session_locks,sessions");
  PgResult rls = c.exec("SELECT bool_and(relrowsecurity AND relforcerowsecurity) FROM pg_class"
                        " WHERE oid IN ('dsh_acp.sessions'::regclass, 'dsh_acp.events'::regclass)");
  BOOST_TEST(rls.value(0, 0) == "t");
  // Not forced on the texts: their search function reads them as the owner (schema.cpp, version 5).
  BOOST_TEST(c.exec("SELECT relrowsecurity FROM pg_class WHERE oid = 'dsh_acp.search'::regclass").value(0, 0) == "t");
  BOOST_TEST(c.exec("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'dsh_acp_user'").value(0, 0) == "f");
}

BOOST_AUTO_TEST_CASE(outdated_and_newer_schemas_are_refused) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  migrate(c);
  c.exec("UPDATE dsh_acp.meta SET value = '0' WHERE key = 'schema_version'");
  std::string outdated = message_of<SchemaOutdated>([&] { check_schema(c); });
  BOOST_TEST(contains(outdated, "version 0, this dsh-acp needs " + std::to_string(kSchemaVersion)), outdated);
  BOOST_TEST(contains(outdated, "run `dsh-acp store migrate"), outdated);

  const std::string next = std::to_string(kSchemaVersion + 1);
  c.exec("UPDATE dsh_acp.meta SET value = $1 WHERE key = 'schema_version'", {next});
  std::string newer = message_of<SchemaTooNew>([&] { check_schema(c); });
  BOOST_TEST(contains(newer, "written by a newer dsh-acp (schema " + next + ", this one knows " +
                                 std::to_string(kSchemaVersion) + ")"),
             newer);
  BOOST_TEST(newer.starts_with(c.name() + ": "), newer);
  message_of<SchemaTooNew>([&] { migrate(c); });
  BOOST_TEST(schema_version(c).value_or(-1) == kSchemaVersion + 1);  // migrate left it alone
}

BOOST_AUTO_TEST_CASE(a_role_outside_dsh_acp_user_is_denied_clearly) {
  pg_test::ScratchDb db;
  PgConnection super = db.connect();
  std::string role = pg_test::unique_role("outsider");
  super.exec_script("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + role + "') THEN CREATE ROLE " +
                    role + " LOGIN; END IF; END $$");
  PgConnection outsider = db.connect(role);
  // It may not create the schema either.
  std::string cannot = message_of<SchemaDenied>([&] { migrate(outsider); });
  BOOST_TEST(contains(cannot, "migrate needs a role that may create schemas"), cannot);
  migrate(super);
  std::string denied = message_of<SchemaDenied>([&] { check_schema(outsider); });
  BOOST_TEST(contains(denied, "role \"" + role + "\" may not use the dsh_acp schema"), denied);
  BOOST_TEST(contains(denied, "GRANT dsh_acp_user TO " + role), denied);
}

// Lines are JSON text in UTF-8: a LATIN1 database would convert them, a SQL_ASCII one would take
// any bytes. Neither is set up nor served.
BOOST_AUTO_TEST_CASE(a_database_not_in_utf8_is_refused_by_migrate_and_at_start_up) {
  for (const std::string encoding : {"SQL_ASCII", "LATIN1"}) {
    pg_test::ScratchDb db("ENCODING '" + encoding + "' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
    PgConnection c = db.connect();
    std::string refused = message_of<SchemaEncoding>([&] { migrate(c); });
    BOOST_TEST(contains(refused, c.name() + ": the database's encoding is " + encoding), refused);
    BOOST_TEST(contains(refused, "needs a UTF8 database"), refused);
    BOOST_TEST(!schema_version(c).has_value());
    message_of<SchemaEncoding>([&] { check_schema(c); });
  }
}

// A URL's client_encoding or PGCLIENTENCODING would have the server convert our UTF-8 lines as if
// they were LATIN1; every connection speaks UTF8.
BOOST_AUTO_TEST_CASE(every_connection_speaks_utf8_whatever_the_url_or_environment_say) {
  pg_test::ScratchDb db;
  ::setenv("PGCLIENTENCODING", "LATIN1", 1);
  struct Unset {
    ~Unset() { ::unsetenv("PGCLIENTENCODING"); }
  } unset;
  for (const std::string& url : {db.url(), db.url() + " client_encoding='LATIN1'"}) {
    PgConnection c = PgConnection::connect(url);
    BOOST_TEST(c.exec("SELECT current_setting('client_encoding')").value(0, 0) == "UTF8");
    BOOST_TEST(c.exec("SELECT length($1::text)", {std::string("caf\xc3\xa9")}).value(0, 0) == "4");
    BOOST_TEST(c.exec("SELECT $1::text", {std::string("caf\xc3\xa9")}).value(0, 0) == "caf\xc3\xa9");
  }
}

BOOST_AUTO_TEST_CASE(generation_is_one_of_the_two_spellings) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  migrate(c);
  BOOST_TEST(sqlstate_of([&] {
               c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at)"
                      " VALUES ('x', '0.2', '{}', 0, 0)");
             }) == "23514");
}

BOOST_AUTO_TEST_CASE(session_changes_are_notified) {
  People p;
  PgConnection listener = p.db.connect();
  listener.exec("LISTEN dsh_acp_sessions");
  insert_session(p.alice, "s-notify");
  std::vector<Notification> n = wait_notifications(listener);
  BOOST_REQUIRE(n.size() == 1);
  BOOST_TEST(n[0].channel == std::string(kNotifyChannel));
  // No id: any role may LISTEN, and must not learn ids of sessions it cannot see.
  BOOST_TEST(n[0].payload == "");
  p.alice.exec("UPDATE dsh_acp.sessions SET title = 'x' WHERE id = 's-notify'");
  BOOST_TEST(wait_notifications(listener).at(0).payload == "");
  p.alice.exec("DELETE FROM dsh_acp.sessions WHERE id = 's-notify'");
  BOOST_TEST(wait_notifications(listener).at(0).payload == "");
}

BOOST_AUTO_TEST_CASE(updates_with_dsh_acp_quiet_are_not_notified_new_and_deleted_sessions_always_are) {
  People p;
  pg_test::Announcements heard(p.db.connect());
  auto quietly = [&](const std::string& sql) {
    Transaction tx(p.alice);
    p.alice.exec(kQuietCommit);
    p.alice.exec(sql);
    tx.commit();
  };
  quietly("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at)"
          " VALUES ('q', '0.1', '{}', 1, 1)");
  BOOST_TEST(heard.since() == 1);
  quietly("UPDATE dsh_acp.sessions SET title = 'streamed' WHERE id = 'q'");
  BOOST_TEST(heard.since() == 0);
  // Only for its own transaction.
  p.alice.exec("UPDATE dsh_acp.sessions SET title = 'durable' WHERE id = 'q'");
  BOOST_TEST(heard.since() == 1);
  quietly("DELETE FROM dsh_acp.sessions WHERE id = 'q'");
  BOOST_TEST(heard.since() == 1);
}

BOOST_AUTO_TEST_CASE(a_sessions_events_go_with_it_for_the_owner_and_a_superuser_alike) {
  People p;
  for (PgConnection* deleter : {&p.alice, &p.super}) {
    insert_session(p.alice, "s");
    insert_event(p.alice, "s", 0);
    insert_event(p.alice, "s", 1);
    insert_session(p.alice, "kept");
    insert_event(p.alice, "kept", 0);
    BOOST_TEST(deleter->exec("DELETE FROM dsh_acp.sessions WHERE id = 's'").affected() == 1);
    BOOST_TEST(p.super.exec("SELECT string_agg(session_id, ',') FROM dsh_acp.events").value(0, 0) == "kept");
    // The id can be taken again from seq 0.
    insert_session(p.alice, "s");
    insert_event(p.alice, "s", 0);
    p.super.exec("DELETE FROM dsh_acp.sessions");
    BOOST_TEST(p.super.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
  }
  // A line goes only into an existing session of the inserting role's.
  BOOST_TEST(sqlstate_of([&] { insert_event(p.alice, "none", 0); }) == "42501");
  // What the foreign key refused or cascaded: a session's id never changes, and TRUNCATE takes the
  // events too.
  insert_session(p.alice, "s");
  insert_event(p.alice, "s", 0);
  BOOST_TEST(sqlstate_of([&] { p.alice.exec("UPDATE dsh_acp.sessions SET id = 'renamed'"); }) == "23503");
  BOOST_TEST(sqlstate_of([&] { p.super.exec("UPDATE dsh_acp.sessions SET id = 'renamed'"); }) == "23503");
  p.alice.exec("UPDATE dsh_acp.sessions SET id = 's', title = 'same id'");  // naming it unchanged is fine
  p.super.exec("TRUNCATE dsh_acp.sessions");
  BOOST_TEST(p.super.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
}

BOOST_AUTO_TEST_CASE(a_version_1_schema_is_upgraded_in_place) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  migrate(c, 1);
  BOOST_TEST(schema_version(c).value_or(-1) == 1);
  message_of<SchemaOutdated>([&] { check_schema(c); });
  c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at) VALUES ('kept', '45fc', '{}', 1, 1)");
  insert_event(c, "kept", 0);
  PgConnection listener = db.connect();
  listener.exec("LISTEN dsh_acp_sessions");
  c.exec("UPDATE dsh_acp.sessions SET title = 'v1' WHERE id = 'kept'");
  BOOST_TEST(wait_notifications(listener).at(0).payload == "kept");  // version 1 named the session
  migrate(c);
  BOOST_TEST(schema_version(c).value_or(-1) == kSchemaVersion);
  check_schema(c);
  BOOST_TEST(c.exec("SELECT title FROM dsh_acp.sessions WHERE id = 'kept'").value(0, 0) == "v1");
  // Without the id now: one notification per transaction that changed sessions.
  c.exec("INSERT INTO dsh_acp.sessions (id, generation, header_line, created_at, updated_at) VALUES ('b', '45fc', '{}', 1, 1)");
  c.exec("UPDATE dsh_acp.sessions SET title = 'v2'");
  std::vector<Notification> n = wait_notifications(listener);
  while (n.size() < 2) {
    auto more = wait_notifications(listener);
    if (more.empty()) break;
    n.insert(n.end(), more.begin(), more.end());
  }
  BOOST_TEST(n.size() == 2u);
  for (const auto& one : n) BOOST_TEST(one.payload == "");
  // Version 3: the events kept, and still deleted with their session.
  BOOST_TEST(c.exec("SELECT line FROM dsh_acp.events WHERE session_id = 'kept'").value(0, 0) == "{\"seq\":0}");
  c.exec("DELETE FROM dsh_acp.sessions WHERE id = 'kept'");
  BOOST_TEST(c.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
}

// A writer's lock is its row of session_locks, locked in a transaction it keeps open. Row security
// keeps every other role from seeing, locking or waiting for that row; the advisory key of version 3
// is gone, so taking it blocks nobody.
BOOST_AUTO_TEST_CASE(a_session_lock_row_is_its_owners_alone) {
  People p;
  p.alice.exec("INSERT INTO dsh_acp.session_locks (id) VALUES ('s1')");
  Transaction held(p.alice);
  BOOST_TEST(p.alice.exec("SELECT true FROM dsh_acp.session_locks WHERE id = 's1' FOR UPDATE").rows() == 1);

  // Bob: his statements never reach alice's row, and never wait for it (a wait would end in 55P03).
  p.bob.exec("SET lock_timeout = '50ms'");
  BOOST_TEST(p.bob.exec("SELECT * FROM dsh_acp.session_locks").rows() == 0);
  BOOST_TEST(p.bob.exec("SELECT true FROM dsh_acp.session_locks WHERE id = 's1' FOR UPDATE").rows() == 0);
  BOOST_TEST(p.bob.exec("SELECT true FROM dsh_acp.session_locks WHERE owner = $1 FOR SHARE", {p.alice_role}).rows() == 0);
  BOOST_TEST(p.bob.exec("UPDATE dsh_acp.session_locks SET id = id").affected() == 0);
  BOOST_TEST(p.bob.exec("DELETE FROM dsh_acp.session_locks").affected() == 0);
  BOOST_TEST(sqlstate_of([&] {
               p.bob.exec("INSERT INTO dsh_acp.session_locks (owner, id) VALUES ($1, 's1')", {p.alice_role});
             }) == "42501");
  // His own row of the same id is his alone, and locks at once.
  p.bob.exec("INSERT INTO dsh_acp.session_locks (id) VALUES ('s1')");
  {
    Transaction tx(p.bob);
    BOOST_TEST(p.bob.exec("SELECT true FROM dsh_acp.session_locks WHERE id = 's1' FOR UPDATE NOWAIT").rows() == 1);
  }
  // Version 3's advisory key is no more: nothing to take, and taking the number blocks no writer.
  BOOST_TEST(sqlstate_of([&] { p.bob.exec("SELECT dsh_acp.session_lock_key('s1')"); }) == "42883");
  // A second writer of alice's waits for the row (here: would wait, so NOWAIT fails).
  PgConnection alice2 = p.db.connect(p.alice_role);
  Transaction tx2(alice2);
  BOOST_TEST(sqlstate_of([&] { alice2.exec("SELECT true FROM dsh_acp.session_locks WHERE id = 's1' FOR UPDATE NOWAIT"); }) ==
             "55P03");
}

BOOST_AUTO_TEST_CASE(a_version_3_schema_is_upgraded_in_place_to_ids_per_owner) {
  pg_test::ScratchDb db;
  PgConnection super = db.connect();
  migrate(super, 3);
  const std::string alice_role = pg_test::ensure_person(super, "alice"), bob_role = pg_test::ensure_person(super, "bob");
  {
    PgConnection alice = db.connect(alice_role), bob = db.connect(bob_role);
    insert_session(alice, "a1");
    insert_event(alice, "a1", 0);
    insert_event(alice, "a1", 1);
    insert_session(bob, "b1");
    insert_event(bob, "b1", 0);
    bob.exec("UPDATE dsh_acp.sessions SET shared = true");
    // Version 3: one id for everybody, and the advisory key any role could take.
    BOOST_TEST(sqlstate_of([&] { insert_session(bob, "a1"); }) == "23505");
    BOOST_TEST(bob.exec("SELECT pg_try_advisory_lock(dsh_acp.session_lock_key('a1'))").value(0, 0) == "t");
  }
  migrate(super);
  BOOST_TEST(schema_version(super).value_or(-1) == kSchemaVersion);
  PgConnection alice = db.connect(alice_role), bob = db.connect(bob_role);
  check_schema(alice);
  // Every line kept, now with its owner.
  BOOST_TEST(super.exec("SELECT string_agg(owner || ':' || session_id || ':' || seq, ',' ORDER BY owner, session_id, seq)"
                        " FROM dsh_acp.events").value(0, 0) ==
             alice_role + ":a1:0," + alice_role + ":a1:1," + bob_role + ":b1:0");
  BOOST_TEST(alice.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 3);  // her own and bob's shared
  BOOST_TEST(bob.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 1);
  // Bob may now keep an id alice has (he learns nothing of hers); each sees their own.
  insert_session(bob, "a1");
  insert_event(bob, "a1", 0);
  BOOST_TEST(sqlstate_of([&] { insert_session(bob, "a1"); }) == "23505");  // his own twice: a conflict
  BOOST_TEST(bob.exec("SELECT count(*) FROM dsh_acp.events WHERE session_id = 'a1'").int64(0, 0) == 1);
  BOOST_TEST(alice.exec("SELECT count(*) FROM dsh_acp.events WHERE session_id = 'a1'").int64(0, 0) == 2);
  // Deleting takes only the owner's lines.
  bob.exec("DELETE FROM dsh_acp.sessions WHERE id = 'a1'");
  BOOST_TEST(super.exec("SELECT count(*) FROM dsh_acp.events WHERE session_id = 'a1'").int64(0, 0) == 2);
  BOOST_TEST(alice.exec("SELECT count(*) FROM dsh_acp.sessions WHERE id = 'a1'").int64(0, 0) == 1);
}

BOOST_AUTO_TEST_CASE(updates_touch_updated_time) {
  People p;
  insert_session(p.alice, "s-touch");
  Transaction tx(p.alice);  // now() is the transaction's start: a later transaction moves it
  p.alice.exec("UPDATE dsh_acp.sessions SET title = 't' WHERE id = 's-touch'");
  BOOST_TEST(p.alice.exec("SELECT updated_time = now() AND created_time < now() FROM dsh_acp.sessions").value(0, 0) == "t");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pg_rls)

BOOST_AUTO_TEST_CASE(people_see_their_own_and_shared_sessions_and_write_only_their_own) {
  People p;
  BOOST_TEST(p.alice.user() == p.alice_role);
  check_schema(p.alice);
  check_schema(p.bob);
  insert_session(p.alice, "s-alice");
  insert_event(p.alice, "s-alice", 0);
  insert_event(p.alice, "s-alice", 1);
  BOOST_TEST(p.alice.exec("SELECT owner FROM dsh_acp.sessions").value(0, 0) == p.alice_role);

  // Not shared: bob sees nothing, and writing into it looks like writing into no session.
  BOOST_TEST(p.bob.exec("SELECT count(*) FROM dsh_acp.sessions").int64(0, 0) == 0);
  BOOST_TEST(p.bob.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
  BOOST_TEST(sqlstate_of([&] { insert_event(p.bob, "s-alice", 2); }) == "42501");
  BOOST_TEST(sqlstate_of([&] { insert_event(p.bob, "s-nobody", 0); }) == "42501");
  BOOST_TEST(sqlstate_of([&] {
               p.bob.exec("INSERT INTO dsh_acp.events (owner, session_id, seq, type, time, line)"
                          " VALUES ($1, 's-alice', 2, 'user', 1, '{}')",
                          {p.alice_role});
             }) == "42501");
  // Nor does an insert tell bob that alice's id exists: ids are unique per owner.
  insert_session(p.bob, "s-alice");
  BOOST_TEST(sqlstate_of([&] { insert_session(p.bob, "s-alice"); }) == "23505");
  BOOST_TEST(p.alice.exec("SELECT count(*) FROM dsh_acp.sessions").int64(0, 0) == 1);
  p.bob.exec("DELETE FROM dsh_acp.sessions WHERE id = 's-alice'");
  BOOST_TEST(p.alice.exec("SELECT count(*) FROM dsh_acp.sessions").int64(0, 0) == 1);

  p.alice.exec("UPDATE dsh_acp.sessions SET shared = true WHERE id = 's-alice'");
  BOOST_TEST(p.bob.exec("SELECT owner FROM dsh_acp.sessions WHERE id = 's-alice'").value(0, 0) == p.alice_role);
  BOOST_TEST(p.bob.exec("SELECT string_agg(line, ',' ORDER BY seq) FROM dsh_acp.events").value(0, 0) ==
             "{\"seq\":0},{\"seq\":1}");

  // Shared is read-only for bob.
  BOOST_TEST(p.bob.exec("UPDATE dsh_acp.sessions SET title = 'mine', shared = false").affected() == 0);
  BOOST_TEST(sqlstate_of([&] { insert_event(p.bob, "s-alice", 2); }) == "42501");
  BOOST_TEST(p.bob.exec("UPDATE dsh_acp.events SET line = 'x'").affected() == 0);
  BOOST_TEST(p.bob.exec("DELETE FROM dsh_acp.events").affected() == 0);
  BOOST_TEST(p.bob.exec("DELETE FROM dsh_acp.sessions").affected() == 0);
  BOOST_TEST(sqlstate_of([&] {
               p.bob.exec("INSERT INTO dsh_acp.sessions (id, owner, generation, header_line, created_at, updated_at)"
                          " VALUES ('s-forged', $1, '0.1', '{}', 0, 0)",
                          {p.alice_role});
             }) == "42501");
  // Nor can alice give a session away (its lines would be left behind).
  BOOST_TEST(sqlstate_of([&] { p.alice.exec("UPDATE dsh_acp.sessions SET owner = $1", {p.bob_role}); }) == "23503");

  PgResult left = p.alice.exec("SELECT title IS NULL, shared, (SELECT count(*) FROM dsh_acp.events) FROM dsh_acp.sessions");
  BOOST_TEST(left.value(0, 0) == "t");
  BOOST_TEST(left.value(0, 1) == "t");
  BOOST_TEST(left.int64(0, 2) == 2);

  // Unshared again: gone from bob's view.
  p.alice.exec("UPDATE dsh_acp.sessions SET shared = false WHERE id = 's-alice'");
  BOOST_TEST(p.bob.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
  // Alice's deletion takes the events with it.
  p.alice.exec("DELETE FROM dsh_acp.sessions WHERE id = 's-alice'");
  BOOST_TEST(p.super.exec("SELECT count(*) FROM dsh_acp.events").int64(0, 0) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
