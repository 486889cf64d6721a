// Every real harness log in tests/data/fixtures/harness loads, each in a store of its own
// (docs/decisions.md#test-data), with the event counts listed there; the legacy and header-less ones
// are corrupt; nothing is modified by reading or by opening a writer on a finished log.
#include "support.hpp"

#include "store/errors.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <map>

using namespace acp::store;
using namespace store_test;

BOOST_AUTO_TEST_SUITE(fixtures)

BOOST_AUTO_TEST_CASE(every_fixture_loads_with_its_documented_event_count) {
  const std::map<std::string, std::size_t> expected = {
      {"advanced-toolchain-child", 13}, {"code-mode-turn", 684},       {"code-mode-workspace-context", 189},
      {"cordis-inspect-jsdoc", 33},     {"escalation-rejected", 215},  {"fs-edit", 159},
      {"handshake", 0},                 {"hook-cc-stop-continue", 67}, {"model-switching", 69},
      {"multi-turn", 65},               {"packed-chunks", 120},        {"permission-switching", 238},
      {"plan-mode", 531},               {"skill-load", 29},
  };
  // The directory must hold exactly these plus the two corrupt ones: a new fixture needs a decision here.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(DSH_TEST_DATA) + "/fixtures/harness")) {
    std::string name = e.path().filename().string();
    name = name.substr(0, name.find(".session.jsonl"));
    BOOST_TEST((expected.count(name) || name == "legacy-header-delta" || name == "no-delegation-depth"), name);
    ++files;
  }
  BOOST_TEST(files == expected.size() + 2);

  for (const auto& [name, count] : expected) {
    BOOST_TEST_CONTEXT(name) {
      TempDir dir;
      const std::string id = install_fixture(dir, name);
      auto store = open_store(dir, std::nullopt);
      BOOST_TEST((store->encoding() == Encoding::none));
      auto path = store->find_log(id);
      BOOST_REQUIRE(path);
      const std::string before = read_file(*path);
      auto log = store->read_log(id);
      BOOST_TEST(log.events.size() == count);
      auto surface = store->read_surface(id);  // folds without error
      if (count > 0) BOOST_TEST(*surface.capturedThroughSeq == std::int64_t(count - 1));
      else BOOST_TEST(!surface.capturedThroughSeq);
      auto listing = store->list_sessions();
      BOOST_REQUIRE(listing.size() == 1u);
      BOOST_TEST(listing[0].header.id == id);
      BOOST_TEST(listing[0].sizeBytes == before.size());
      // All acp fixtures with a model turn carry a fallback title.
      if (count > 0) {
        BOOST_TEST(store->read_title(id).has_value());
        BOOST_TEST(listing[0].title.has_value());
        BOOST_TEST(*listing[0].title == store->read_title(id)->title);
        BOOST_TEST(listing[0].updatedAt == log.events.back().at("time").as_int64());
      }
      { auto w = store->open(id); BOOST_TEST(w.next_seq() == std::int64_t(count)); }
      BOOST_TEST(read_file(*path) == before);  // finished logs are never rewritten
    }
  }
}

BOOST_AUTO_TEST_CASE(handshake_is_cwd_less_but_readable) {
  TempDir dir;
  const std::string id = install_fixture(dir, "handshake");
  auto store = open_store(dir, std::nullopt);
  BOOST_TEST(*store->find_log(id) == dir.path() + "/root/_no-cwd/" + id + ".jsonl");
  auto log = store->read_log(id);
  BOOST_TEST(!log.header.cwd);
  BOOST_TEST(log.header.createdAt == 0);
  BOOST_TEST(store->list_sessions().size() == 1u);
  ListQuery q;
  q.with_cwd_only = true;  // session/list omits cwd-less sessions
  BOOST_TEST(store->list_sessions(q).empty());
}

BOOST_AUTO_TEST_CASE(legacy_and_depthless_fixtures_are_corrupt) {
  struct Case {
    const char* name;
    std::int64_t line;
    const char* reason;
  };
  for (const Case& c : {Case{"legacy-header-delta", 693, "legacy request/header-delta event is not supported"},
                        Case{"no-delegation-depth", 1, "invalid session header"}}) {
    BOOST_TEST_CONTEXT(c.name) {
      TempDir dir;
      const std::string id = install_fixture(dir, c.name);
      auto store = open_store(dir, std::nullopt);
      const std::string path = *store->find_log(id);
      const std::string before = read_file(path);
      try {
        store->read_log(id);
        BOOST_FAIL("expected StoreCorrupt");
      } catch (const StoreCorrupt& e) {
        BOOST_TEST(e.file() == path);
        BOOST_TEST(e.line() == c.line);
        BOOST_TEST(e.reason() == c.reason);
        BOOST_TEST(std::string(e.what()) == path + ":" + std::to_string(c.line) + ": " + c.reason);
      }
      BOOST_CHECK_THROW(store->open(id), StoreCorrupt);
      BOOST_CHECK_THROW(store->read_surface(id), StoreCorrupt);
      BOOST_TEST(read_file(path) == before);
    }
  }
}

BOOST_AUTO_TEST_CASE(two_fixtures_sharing_an_id_in_one_store_are_a_duplicate) {
  // cordis-inspect-jsdoc and advanced-toolchain-child share an id in different cwd buckets.
  TempDir dir;
  const std::string a = install_fixture(dir, "cordis-inspect-jsdoc");
  const std::string b = install_fixture(dir, "advanced-toolchain-child");
  BOOST_REQUIRE(a == b);
  auto store = open_store(dir, std::nullopt);
  try {
    store->read_log(a);
    BOOST_FAIL("expected a duplicate error");
  } catch (const StoreError& e) {
    BOOST_TEST(std::string(e.what()) == "duplicate JSONL session id \"" + a + "\" appears in multiple cwd buckets");
  }
}

BOOST_AUTO_TEST_SUITE_END()
