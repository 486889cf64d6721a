// PostgreSQL store URLs (store/pg/url.hpp): recognised by scheme, passwords never shown.
#include "store/pg/url.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::store::pg;

BOOST_AUTO_TEST_SUITE(pg_url)

BOOST_AUTO_TEST_CASE(schemes) {
  BOOST_TEST(is_postgres_url("postgresql://host/db"));
  BOOST_TEST(is_postgres_url("postgres://host/db"));
  BOOST_TEST(is_postgres_url("PostgreSQL:///db?host=/tmp"));
  BOOST_TEST(!is_postgres_url("/home/alice/.dsh/sessions"));
  BOOST_TEST(!is_postgres_url("postgresql:/host"));
  BOOST_TEST(!is_postgres_url("mysql://host/db"));
  BOOST_TEST(!is_postgres_url(""));
}

BOOST_AUTO_TEST_CASE(userinfo_password_is_masked) {
  BOOST_TEST(redact_url("postgresql://alice:s3cret@db.example:5432/acp") == "postgresql://alice:***@db.example:5432/acp");
  BOOST_TEST(redact_url("postgres://alice:s3cret@db/acp?sslmode=require") == "postgres://alice:***@db/acp?sslmode=require");
  // Characters URI syntax wants encoded still stay hidden when they come raw.
  BOOST_TEST(redact_url("postgresql://alice:a@b/c@db/acp") == "postgresql://alice:***@db/acp");
  BOOST_TEST(redact_url("postgresql://alice:p%40ss@[::1]:5432/acp") == "postgresql://alice:***@[::1]:5432/acp");
  BOOST_TEST(url_has_password("postgresql://alice:s3cret@db/acp"));
  BOOST_TEST(url_has_password("postgresql://alice:@h/d"));  // empty, but still a password field
}

BOOST_AUTO_TEST_CASE(query_password_is_masked) {
  BOOST_TEST(redact_url("postgresql:///acp?host=/tmp/pg&password=s3cret") == "postgresql:///acp?host=/tmp/pg&password=***");
  BOOST_TEST(redact_url("postgresql:///acp?password=s3cret&user=alice") == "postgresql:///acp?password=***&user=alice");
  BOOST_TEST(redact_url("postgresql://bob:x@h/acp?Password=y") == "postgresql://bob:***@h/acp?Password=***");
  BOOST_TEST(url_has_password("postgresql:///acp?host=/tmp&password=s3cret"));
  BOOST_TEST(redact_url("postgresql://a:b@h/d?password=c") == "postgresql://a:***@h/d?password=***");
}

BOOST_AUTO_TEST_CASE(urls_without_password_are_unchanged) {
  for (std::string_view url : {"postgresql://alice@db.example:5432/acp", "postgresql:///acp?host=/tmp/pg&user=alice",
                               "postgresql://db:5432/acp", "postgresql://[::1]:5432/acp?passfile=/home/a/.pgpass",
                               "postgresql://alice@db/acp?application_name=x:y@z"}) {
    BOOST_TEST(redact_url(url) == url);
    BOOST_TEST(!url_has_password(url));
  }
  BOOST_TEST(redact_url("/srv/a:b@c") == "/srv/a:b@c");  // a directory, no URL
}

BOOST_AUTO_TEST_CASE(conninfo_password_is_masked) {
  BOOST_TEST(redact_url("host=/tmp dbname=acp password=s3cret user=alice") == "host=/tmp dbname=acp password=*** user=alice");
  BOOST_TEST(redact_url("password = 'a b\\' c' dbname=acp") == "password = *** dbname=acp");
  BOOST_TEST(redact_url("host=/tmp passfile=/x dbname=acp") == "host=/tmp passfile=/x dbname=acp");
  BOOST_TEST(!url_has_password("host=/tmp passfile=/x dbname=acp"));
}

BOOST_AUTO_TEST_CASE(messages_are_scrubbed) {
  BOOST_TEST(scrub_passwords("invalid percent-encoded token: \"s3%cret\"", "postgresql://a:s3%cret@h/db") ==
             "invalid percent-encoded token: \"***\"");
  BOOST_TEST(scrub_passwords("no password here", "postgresql://a@h/db") == "no password here");
}

BOOST_AUTO_TEST_SUITE_END()
