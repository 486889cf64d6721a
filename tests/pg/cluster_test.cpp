// The test cluster itself (tests/pg/pg-cluster, fixture postgres): the server the store is built
// for, ICU collations, and roles for the people tests act as.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace pg_test;

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(server_is_postgresql_15_or_newer) {
  Connection c = connect();
  BOOST_TEST(std::stoi(value(c.get(), "SELECT current_setting('server_version_num')")) >= 150000);
  BOOST_TEST(value(c.get(), "SELECT current_user") == "postgres");
  BOOST_TEST(value(c.get(), "SHOW server_encoding") == "UTF8");
}

// Listing ties are ordered in en-US collation: the ICU collation must exist and order as ICU does
// ('a' before 'B', where byte order puts 'B' first).
BOOST_AUTO_TEST_CASE(icu_en_us_collation_exists) {
  Connection c = connect();
  BOOST_TEST(value(c.get(), "SELECT count(*) FROM pg_collation WHERE collname = 'en-US-x-icu'") == "1");
  BOOST_TEST(value(c.get(), R"(SELECT 'a' < 'B' COLLATE "en-US-x-icu")") == "t");
  BOOST_TEST(value(c.get(), R"(SELECT 'a' < 'B' COLLATE "C")") == "f");
}

BOOST_AUTO_TEST_CASE(a_role_can_be_created_logged_in_as_and_dropped) {
  std::string alice = unique_role("alice");
  Connection admin = connect();
  exec(admin.get(), "DROP ROLE IF EXISTS " + alice);
  exec(admin.get(), "CREATE ROLE " + alice + " LOGIN");
  {
    Connection as_alice = connect(alice);
    BOOST_TEST(value(as_alice.get(), "SELECT current_user") == alice);
    BOOST_TEST(value(as_alice.get(), "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == "f");
  }
  exec(admin.get(), "DROP ROLE " + alice);
  Connection refused = try_connect(alice);
  BOOST_TEST(PQstatus(refused.get()) == CONNECTION_BAD);
  BOOST_TEST(std::string(PQerrorMessage(refused.get())).find("does not exist") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
