// Helpers for pg_tests: raw libpq against the suite's own cluster (cmake/Postgres.cmake), for
// setting up and inspecting what the code under test does. DSH_ACP_TEST_PG is a libpq URL for the
// superuser "postgres" over a unix socket; any role connects there without a password.
#pragma once

#include <libpq-fe.h>

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

namespace pg_test {

struct PgDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
  void operator()(PGresult* r) const { PQclear(r); }
};
using Connection = std::unique_ptr<PGconn, PgDeleter>;
using Result = std::unique_ptr<PGresult, PgDeleter>;

// The cluster's URL; a test run outside CTest (no fixture) fails here with the reason.
inline std::string url() {
  const char* u = std::getenv("DSH_ACP_TEST_PG");
  BOOST_TEST_REQUIRE((u != nullptr && *u != '\0'),
                     "DSH_ACP_TEST_PG is not set: run through ctest (fixture postgres) or set it to a libpq URL");
  return u;
}

// A connection to the test cluster, as `user` when given (later keywords override the URL's).
// Not fatal: a test of a refused login inspects PQstatus itself.
inline Connection try_connect(const std::optional<std::string>& user = std::nullopt) {
  std::string u = url();
  const char* keys[] = {"dbname", user ? "user" : nullptr, nullptr};
  const char* values[] = {u.c_str(), user ? user->c_str() : nullptr, nullptr};
  return Connection(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
}

inline Connection connect(const std::optional<std::string>& user = std::nullopt) {
  Connection c = try_connect(user);
  BOOST_TEST_REQUIRE(PQstatus(c.get()) == CONNECTION_OK,
                     "connecting to DSH_ACP_TEST_PG" << (user ? " as " + *user : "") << ": "
                                                     << PQerrorMessage(c.get()));
  return c;
}

// Runs one statement; fails the test with the server's message unless it succeeds.
inline Result exec(PGconn* c, const std::string& sql) {
  Result r(PQexec(c, sql.c_str()));
  ExecStatusType s = PQresultStatus(r.get());
  BOOST_TEST_REQUIRE((s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK), sql << ": " << PQerrorMessage(c));
  return r;
}

// The single value of a one-row, one-column query.
inline std::string value(PGconn* c, const std::string& sql) {
  Result r = exec(c, sql);
  BOOST_TEST_REQUIRE((PQntuples(r.get()) == 1 && PQnfields(r.get()) == 1), sql << ": not one value");
  return PQgetvalue(r.get(), 0, 0);
}

// Roles belong to the whole cluster, which every test process of a run shares (two at a time):
// a role name of this process's own ("alice_4711") never collides with another suite's.
inline std::string unique_role(const std::string& person) { return person + "_" + std::to_string(::getpid()); }

} // namespace pg_test
