// A database of its own for one test case, on the suite's PostgreSQL (DSH_ACP_TEST_PG, a superuser
// URL), dropped afterwards; and login roles for people (cluster-wide, created once, reused).
#pragma once

#include "support.hpp"

#include "store/pg/connection.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include <poll.h>
#include <unistd.h>

namespace pg_test {

/// `url` as a conninfo string with some keywords replaced ("dbname", "user", "host", ...).
inline std::string conninfo_with(const std::string& url, const std::map<std::string, std::string>& overrides) {
  PQconninfoOption* options = PQconninfoParse(url.c_str(), nullptr);
  BOOST_TEST_REQUIRE(options != nullptr);
  auto quoted = [](const std::string& v) {
    std::string q = "'";
    for (char ch : v) q += (ch == '\'' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    return q + "'";
  };
  std::string out;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    auto over = overrides.find(o->keyword);
    if (over == overrides.end() && !o->val) continue;
    out += std::string(out.empty() ? "" : " ") + o->keyword + "=" + quoted(over != overrides.end() ? over->second : o->val);
  }
  for (const auto& [key, value] : overrides) {
    bool known = false;
    for (PQconninfoOption* o = options; o->keyword; ++o) known = known || key == o->keyword;
    BOOST_TEST_REQUIRE(known, "not a libpq keyword: " << key);
  }
  PQconninfoFree(options);
  return out;
}

/// The login role of `person` in dsh_acp_user (which exists once some database was migrated), a
/// name of this process's own (unique_role): created once, reused by later test cases.
inline std::string ensure_person(acp::store::pg::PgConnection& super, const std::string& person) {
  std::string role = unique_role(person);
  super.exec_script("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + role + "') THEN CREATE ROLE " +
                    role + " LOGIN IN ROLE dsh_acp_user; END IF; END $$");
  return role;
}

class ScratchDb {
public:
  /// `options`: what CREATE DATABASE says after the name (an encoding, a template).
  explicit ScratchDb(const std::string& options = "")
      : name_("pgconn_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++)) {
    admin().exec("CREATE DATABASE " + name_ + (options.empty() ? "" : " " + options));
  }
  ~ScratchDb() {
    try {
      admin().exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception& e) {
      BOOST_TEST_MESSAGE("dropping " << name_ << ": " << e.what());
    }
  }
  ScratchDb(const ScratchDb&) = delete;
  ScratchDb& operator=(const ScratchDb&) = delete;

  const std::string& name() const { return name_; }
  /// Connection string of this database as `user` (the superuser when empty).
  std::string url(const std::string& user = "") const {
    std::map<std::string, std::string> o{{"dbname", name_}};
    if (!user.empty()) o["user"] = user;
    return conninfo_with(pg_test::url(), o);
  }
  acp::store::pg::PgConnection connect(const std::string& user = "") const {
    return acp::store::pg::PgConnection::connect(url(user));
  }

private:
  static std::atomic<int>& counter() {
    static std::atomic<int> n{0};
    return n;
  }
  static acp::store::pg::PgConnection& admin() {
    static acp::store::pg::PgConnection c = acp::store::pg::PgConnection::connect(pg_test::url());
    return c;
  }
  std::string name_;
};

/// What a LISTENing connection has received, waiting up to 10 s for the first (empty: nothing came).
inline std::vector<acp::store::pg::Notification> wait_notifications(acp::store::pg::PgConnection& c) {
  for (;;) {
    std::vector<acp::store::pg::Notification> n = c.take_notifications();
    if (!n.empty()) return n;
    pollfd p{c.socket(), POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) return {};
  }
}

/// Announcements (NOTIFY dsh_acp_sessions) as a listening server receives them, in commit order.
class Announcements {
public:
  /// `c`: a connection of its own (it LISTENs).
  explicit Announcements(acp::store::pg::PgConnection c) : c_(std::move(c)) {
    c_.exec("LISTEN dsh_acp_sessions");
    c_.exec("LISTEN dsh_acp_test_marker");
  }
  /// Those committed since the last call: up to a marker committed now.
  int since() {
    c_.exec("NOTIFY dsh_acp_test_marker");
    int n = 0;
    for (;;) {
      std::vector<acp::store::pg::Notification> got = wait_notifications(c_);
      BOOST_TEST_REQUIRE(!got.empty(), "no marker within 10 s");
      for (const auto& one : got) {
        if (one.channel == "dsh_acp_test_marker") return n;
        ++n;
      }
    }
  }
  /// Waits for one (a commit not ordered before anything of ours), up to 10 s.
  bool arrives() {
    for (const auto& one : wait_notifications(c_))
      if (one.channel == "dsh_acp_sessions") return true;
    return false;
  }

private:
  acp::store::pg::PgConnection c_;
};

} // namespace pg_test
