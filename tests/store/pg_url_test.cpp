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

// libpq's parser decides what a URL carries: every spelling it reads as a password is refused, and
// none of them is shown.
BOOST_AUTO_TEST_CASE(every_spelling_libpq_reads_is_a_password) {
  const std::string_view secret = "s3cret";
  for (std::string_view url : {
           "postgresql:///acp?host=/tmp&%70assword=s3cret",           // a percent-encoded keyword
           "postgresql:///acp?host=/tmp&%70%61%73%73%77%6f%72%64=s3cret",
           "postgresql:///acp?host=/tmp&password=s3%63ret",           // a percent-encoded value
           "postgresql://alice:s3cret@/acp?host=/tmp",                 // the userinfo
           "postgresql://alice:s3cret@db.example/acp",
           "postgresql:///acp?sslpassword=s3cret",                    // the client key's passphrase
           "postgresql:///acp?%73slpassword=s3cret",
           "postgresql:///acp?password=x&password=s3cret",            // repeated: the last wins in libpq
           "postgresql:///acp?dbname=host%3D%2Ftmp%20password%3Ds3cret",                 // a nested conninfo
           "postgresql:///acp?dbname=postgresql%3A%2F%2Fa%3As3cret%40h%2Fdb",            // a nested URL
           "postgresql:///acp?%64bname=host%3D%2Ftmp%20%70assword%3Ds3cret",
       }) {
    BOOST_TEST_CONTEXT(url) {
      BOOST_TEST(url_has_password(url));
      const std::string shown = redact_url(url);
      BOOST_TEST(shown.find(secret) == std::string::npos, shown);
      BOOST_TEST(shown.find("s3%63ret") == std::string::npos, shown);
      BOOST_TEST((!url_has_password(shown) || shown.find("***") != std::string::npos));
    }
  }
  BOOST_TEST(redact_url("postgresql:///acp?host=/tmp&%70assword=s3cret") == "postgresql:///acp?host=/tmp&%70assword=***");
  BOOST_TEST(url_has_password("postgresql:///acp?password="));  // empty, but still a password field
  // A file of passwords is one of the libpq ways, and so is a service.
  BOOST_TEST(!url_has_password("postgresql:///acp?host=/tmp&passfile=/home/a/.pgpass&service=work"));
  BOOST_TEST(!url_has_password("postgresql:///acp?dbname=plain"));
}

BOOST_AUTO_TEST_CASE(unreadable_urls_show_no_password) {
  // libpq cannot parse these; the text still shows a password field.
  for (std::string_view url : {"postgresql://alice:s3cret@h:5432/acp?password", "postgresql:///acp?%70assword=s3cret&%zz=1"}) {
    BOOST_TEST_CONTEXT(url) {
      BOOST_TEST(url_has_password(url));
      BOOST_TEST(redact_url(url).find("s3cret") == std::string::npos, redact_url(url));
    }
  }
}

BOOST_AUTO_TEST_CASE(messages_are_scrubbed) {
  BOOST_TEST(scrub_passwords("password \"s3cret\" and s3cret", "postgresql:///acp?%70assword=s3%63ret") ==
             "password \"***\" and ***");
  BOOST_TEST(scrub_passwords("invalid percent-encoded token: \"s3%cret\"", "postgresql://a:s3%cret@h/db") ==
             "invalid percent-encoded token: \"***\"");
  BOOST_TEST(scrub_passwords("no password here", "postgresql://a@h/db") == "no password here");
}

BOOST_AUTO_TEST_SUITE_END()
