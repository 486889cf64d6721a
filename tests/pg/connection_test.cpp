// PgConnection against a real PostgreSQL: parameters and results, errors that name the store and
// carry SQLSTATE, connect failures as one clear line, timeouts, cancel from another thread,
// transactions, reconnecting.
#include "../common/temp_dir.hpp"
#include "scratch_db.hpp"

#include "store/pg/connection.hpp"
#include "store/pg/url.hpp"
#include "support/log.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace acp::store::pg;
using namespace std::chrono_literals;

namespace {

/// Runs `f` and returns the PgError it throws (fails the test when it throws none).
template <class F>
PgError error_of(F&& f) {
  try {
    f();
  } catch (const PgError& e) {
    return e;
  }
  BOOST_FAIL("expected a PgError");
  throw std::logic_error("unreachable");
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos && s.find('\t') == std::string::npos; }

} // namespace

BOOST_AUTO_TEST_SUITE(pg_connection)

BOOST_AUTO_TEST_CASE(server_notices_and_warnings_go_to_the_log_not_to_stderr) {
  pg_test::ScratchDb db;
  acp::test::TempDir tmp("pgnotice");
  const std::string& dir = tmp.path();
  BOOST_TEST_REQUIRE(acp::log::init(dir + "/dsh-acp.log", acp::log::Level::info) >= 0);
  PgConnection c = db.connect();
  {
    // stderr into a file while the server speaks up, restored whatever happens.
    struct Redirect {
      int saved = ::dup(2);
      explicit Redirect(const std::string& path) {
        const int to = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (to >= 0) ::dup2(to, 2), ::close(to);
      }
      ~Redirect() { ::dup2(saved, 2), ::close(saved); }
    } redirect(dir + "/stderr");
    c.exec("DO $$ BEGIN RAISE WARNING 'dsh-acp test warning'; RAISE NOTICE 'dsh-acp test notice'; END $$");
    c.exec("SELECT pg_advisory_unlock(1)");  // not held: a WARNING
    // A new connection's notices from its first message on (connect-time ones go the same way).
    PgConnection other = db.connect();
    other.exec("DO $$ BEGIN RAISE WARNING 'dsh-acp second connection'; END $$");
  }
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string log = slurp(dir + "/dsh-acp.log");
  BOOST_TEST(slurp(dir + "/stderr") == "");
  BOOST_TEST(log.find(c.name() + ": WARNING: dsh-acp test warning") != std::string::npos, log);
  BOOST_TEST(log.find(c.name() + ": NOTICE: dsh-acp test notice") != std::string::npos, log);
  BOOST_TEST(log.find(": WARNING: you don't own a lock of type ExclusiveLock") != std::string::npos, log);
  BOOST_TEST(log.find(": WARNING: dsh-acp second connection") != std::string::npos, log);
  acp::log::to_stderr(acp::log::Level::error);  // the rest of the binary: errors only, into the test output
}

BOOST_AUTO_TEST_CASE(text_parameters_and_results) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  std::string line = "{\"type\":\"x\",\"text\":\"a\\nb 'quoted' \xC3\xA9\"}";
  PgResult r = c.exec("SELECT $1::text, $2::text IS NULL, $3::bigint + 1, length($1)", {line, std::nullopt, "41"});
  BOOST_TEST(r.rows() == 1);
  BOOST_TEST(r.columns() == 4);
  BOOST_TEST(r.value(0, 0) == line);  // verbatim, byte for byte
  BOOST_TEST(r.value(0, 1) == "t");
  BOOST_TEST(r.int64(0, 2) == 42);
  BOOST_TEST(r.get(0, 0).has_value());

  c.exec("CREATE TABLE t (k int PRIMARY KEY, v text)");
  std::vector<Param> params{"1", std::nullopt};
  BOOST_TEST(c.exec("INSERT INTO t VALUES ($1, $2)", params).affected() == 1);
  PgResult nulls = c.exec("SELECT v FROM t");
  BOOST_TEST(nulls.is_null(0, 0));
  BOOST_TEST(!nulls.get(0, 0).has_value());
  BOOST_TEST(nulls.value(0, 0) == "");
  BOOST_TEST(c.exec("UPDATE t SET v = 'x' WHERE k > 5").affected() == 0);
  BOOST_CHECK_THROW(c.exec("SELECT 'abc'").int64(0, 0), acp::store::StoreError);
}

BOOST_AUTO_TEST_CASE(errors_name_the_store_and_carry_sqlstate) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  PgError e = error_of([&] { c.exec("SELECT * FROM no_such_table"); });
  BOOST_TEST(e.sqlstate() == "42P01");
  BOOST_TEST(std::string(e.what()) == c.name() + ": relation \"no_such_table\" does not exist");
  BOOST_TEST(!e.connection_lost());
  // The connection stays usable after a failed statement.
  BOOST_TEST(c.exec("SELECT 1").value(0, 0) == "1");
  BOOST_TEST(error_of([&] { c.exec_script("SELECT 1; SELECT 1/0; SELECT 2"); }).sqlstate() == "22012");
}

BOOST_AUTO_TEST_CASE(a_server_that_never_answers_is_given_up_after_connect_timeout) {
  // A listening socket nobody serves: the kernel accepts the connection, no startup reply comes.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_TEST_REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  BOOST_TEST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_TEST_REQUIRE(::listen(listener, 4) == 0);
  BOOST_TEST_REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string url = "postgresql://nobody@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) +
                          "/db?sslmode=disable&connect_timeout=2";
  PgError e = error_of([&] { PgConnection::connect(url); });
  BOOST_TEST(e.sqlstate() == "08001");
  BOOST_TEST(std::string(e.what()) == url + ": cannot connect: timeout expired", e.what());
  ::close(listener);
}

BOOST_AUTO_TEST_CASE(unreachable_server_is_one_clear_line) {
  std::string url = "postgresql:///postgres?host=/tmp/dsh-acp-no-such-socket-dir&user=nobody";
  PgError e = error_of([&] { PgConnection::connect(url); });
  std::string what = e.what();
  BOOST_TEST(e.sqlstate() == "08001");
  BOOST_TEST(e.connection_lost());
  BOOST_TEST(one_line(what), what);
  BOOST_TEST(what.starts_with(url + ": cannot connect: "), what);
  BOOST_TEST(what.find("/tmp/dsh-acp-no-such-socket-dir") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(passwords_never_appear_in_errors) {
  std::string url = "postgresql://alice:hunter2@/postgres?host=/tmp/dsh-acp-no-such-socket-dir";
  std::string what = error_of([&] { PgConnection::connect(url); }).what();
  BOOST_TEST(what.find("hunter2") == std::string::npos, what);
  BOOST_TEST(what.starts_with("postgresql://alice:***@/postgres?host="), what);
  // libpq quotes a malformed token of the URL in its parse error.
  std::string bad = "postgresql://alice:hun%zzter2@localhost/postgres";
  PgError parse = error_of([&] { PgConnection::connect(bad); });
  what = parse.what();
  BOOST_TEST(what.find("hun%zzter2") == std::string::npos, what);
  BOOST_TEST(what.find("invalid connection URL") != std::string::npos, what);
  BOOST_TEST(one_line(what), what);
}

BOOST_AUTO_TEST_CASE(missing_database_is_one_clear_line) {
  std::string url = pg_test::conninfo_with(pg_test::url(), {{"dbname", "dsh_acp_no_such_db"}});
  PgError e = error_of([&] { PgConnection::connect(url); });
  std::string what = e.what();
  BOOST_TEST(e.sqlstate() == "3D000", what);
  BOOST_TEST(one_line(what), what);
  BOOST_TEST(what.find("database \"dsh_acp_no_such_db\" does not exist") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(unknown_role_is_an_authorization_error) {
  std::string url = pg_test::conninfo_with(pg_test::url(), {{"user", "dsh_acp_no_such_role"}});
  PgError e = error_of([&] { PgConnection::connect(url); });
  BOOST_TEST(e.sqlstate() == "28000", e.what());
  BOOST_TEST(one_line(e.what()));
}

BOOST_AUTO_TEST_CASE(session_settings_are_applied_at_connect) {
  pg_test::ScratchDb db;
  ConnectOptions o;
  o.statement_timeout = 1500ms;
  o.lock_timeout = 700ms;
  PgConnection c = PgConnection::connect(db.url(), o);
  PgResult r = c.exec("SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),"
                      " current_setting('application_name')");
  BOOST_TEST(r.value(0, 0) == "1500ms");
  BOOST_TEST(r.value(0, 1) == "700ms");
  BOOST_TEST(r.value(0, 2) == "dsh-acp");
  // The URL's own application_name and options are kept.
  std::string own = pg_test::conninfo_with(db.url(), {{"application_name", "mine"}, {"options", "-c work_mem=7MB"}});
  PgConnection d = PgConnection::connect(own, o);
  PgResult s = d.exec("SELECT current_setting('application_name'), current_setting('work_mem'),"
                      " current_setting('statement_timeout')");
  BOOST_TEST(s.value(0, 0) == "mine");
  BOOST_TEST(s.value(0, 1) == "7MB");
  BOOST_TEST(s.value(0, 2) == "1500ms");
}

BOOST_AUTO_TEST_CASE(statement_and_lock_timeouts_bound_waits) {
  pg_test::ScratchDb db;
  ConnectOptions o;
  o.statement_timeout = 200ms;
  PgConnection c = PgConnection::connect(db.url(), o);
  BOOST_TEST(error_of([&] { c.exec("SELECT pg_sleep(30)"); }).sqlstate() == "57014");

  o.statement_timeout = 30'000ms;
  o.lock_timeout = 200ms;
  PgConnection d = PgConnection::connect(db.url(), o);
  PgConnection holder = db.connect();
  holder.exec("CREATE TABLE t (k int)");
  Transaction tx(holder);
  holder.exec("LOCK TABLE t IN ACCESS EXCLUSIVE MODE");
  BOOST_TEST(error_of([&] { d.exec("SELECT * FROM t"); }).sqlstate() == "55P03");
}

BOOST_AUTO_TEST_CASE(cancel_interrupts_a_blocked_call_from_another_thread) {
  pg_test::ScratchDb db;
  PgConnection holder = db.connect();
  PgConnection c = db.connect();
  holder.exec("SELECT pg_advisory_lock(17)");
  auto blocked = std::async(std::launch::async, [&] { return error_of([&] { c.exec("SELECT pg_advisory_lock(17)"); }); });
  // A cancel that reaches the server before the statement does is a no-op: repeat until the call
  // returns (a stop token's callback cancels once; its caller checks the token before each call).
  while (blocked.wait_for(20ms) != std::future_status::ready) c.cancel();
  PgError e = blocked.get();
  BOOST_TEST(e.sqlstate() == "57014", e.what());
  BOOST_TEST(c.ok());
  BOOST_TEST(c.exec("SELECT 1").value(0, 0) == "1");
}

BOOST_AUTO_TEST_CASE(transaction_rolls_back_unless_committed) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  c.exec("CREATE TABLE t (k int PRIMARY KEY)");
  {
    Transaction tx(c);
    c.exec("INSERT INTO t VALUES (1)");
  }
  BOOST_TEST(c.exec("SELECT count(*) FROM t").int64(0, 0) == 0);
  {
    Transaction tx(c);
    c.exec("INSERT INTO t VALUES (2)");
    tx.commit();
  }
  BOOST_TEST(c.exec("SELECT count(*) FROM t").int64(0, 0) == 1);
  // A batch that failed halfway is never half visible, and COMMIT of it says so.
  {
    Transaction tx(c);
    c.exec("INSERT INTO t VALUES (3)");
    BOOST_CHECK_THROW(c.exec("INSERT INTO t VALUES (2)"), PgError);
    PgError e = error_of([&] { tx.commit(); });
    BOOST_TEST(std::string(e.what()).find("rolled back") != std::string::npos);
  }
  BOOST_TEST(c.exec("SELECT count(*) FROM t").int64(0, 0) == 1);
  BOOST_TEST(c.exec("SELECT 1").value(0, 0) == "1");  // not left inside a transaction
}

BOOST_AUTO_TEST_CASE(lost_connection_is_reported_then_reset) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  PgConnection admin = db.connect();
  std::string pid = std::to_string(PQbackendPID(c.native()));
  admin.exec("SELECT pg_terminate_backend($1::int, 5000)", {pid});
  PgError e = error_of([&] { c.exec("SELECT 1"); });
  BOOST_TEST(e.connection_lost(), e.what() << " " << e.sqlstate());
  BOOST_TEST(std::string(e.what()).starts_with(c.name() + ": "));
  BOOST_TEST(!c.ok());
  c.reset();
  BOOST_TEST(c.ok());
  BOOST_TEST(c.exec("SELECT 1").value(0, 0) == "1");
}

BOOST_AUTO_TEST_CASE(notifications_arrive_on_the_socket) {
  pg_test::ScratchDb db;
  PgConnection listener = db.connect();
  PgConnection sender = db.connect();
  listener.exec("LISTEN dsh_acp_test");
  BOOST_TEST(listener.take_notifications().empty());
  sender.exec("SELECT pg_notify('dsh_acp_test', 'hello')");
  pollfd p{listener.socket(), POLLIN, 0};
  BOOST_REQUIRE(::poll(&p, 1, -1) == 1);  // no time limit: a hang ends at the CTest timeout
  std::vector<Notification> n = listener.take_notifications();
  BOOST_REQUIRE(n.size() == 1);
  BOOST_TEST(n[0].channel == "dsh_acp_test");
  BOOST_TEST(n[0].payload == "hello");
  BOOST_TEST(n[0].backend_pid == PQbackendPID(sender.native()));
}

BOOST_AUTO_TEST_CASE(user_is_the_login_role) {
  pg_test::ScratchDb db;
  PgConnection c = db.connect();
  BOOST_TEST(c.user() == std::string(c.exec("SELECT current_user").value(0, 0)));
}

BOOST_AUTO_TEST_SUITE_END()
