// listSessions order (newest first, id ties under en-US collation) and the listing index:
// served without reading logs, notices files written behind its back, rebuilds from a missing or
// corrupt cache file.
#include "support.hpp"

#include "store/collation.hpp"
#include "store/event_builders.hpp"
#include "store/layout.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <thread>

using namespace acp::store;
using namespace store_test;

namespace {

void make_session(SessionStore& store, const std::string& id, std::int64_t created, std::optional<std::string> cwd = "/p") {
  auto w = store.create(make_header(id, std::move(cwd), created));
  write_turn(w, "title of " + id, created + 10);
}

std::vector<std::string> ids(const std::vector<SessionListing>& l) {
  std::vector<std::string> out;
  for (auto& x : l) out.push_back(x.header.id);
  return out;
}

std::string cache_file(const TempDir& dir) {
  for (auto& e : std::filesystem::directory_iterator(dir / "cache"))
    if (e.path().extension() == ".json") return e.path().string();
  return {};
}

} // namespace

BOOST_AUTO_TEST_SUITE(listing)

BOOST_AUTO_TEST_CASE(collation_is_en_us_not_code_point) {
  BOOST_TEST(compare_ids_en_us("a", "B") < 0);   // code-point order would put "B" first
  BOOST_TEST(compare_ids_en_us("a", "A") < 0);   // lowercase first at tertiary strength
  BOOST_TEST(compare_ids_en_us("\xC3\xA4", "b") < 0);  // ä sorts with a
  BOOST_TEST(compare_ids_en_us("item-10", "item-9") < 0);  // no numeric collation
  BOOST_TEST(compare_ids_en_us("x", "x") == 0);
}

BOOST_AUTO_TEST_CASE(lowercase_is_full_en_us_mapping) {
  BOOST_TEST(lowercase_en_us("ABC") == "abc");
  BOOST_TEST(lowercase_en_us("\xCE\xA3\xCE\x91\xCE\xA3") == "\xCF\x83\xCE\xB1\xCF\x82");  // ΣΑΣ -> σας (final sigma)
  BOOST_TEST(lowercase_en_us("\xC4\xB0") == "i\xCC\x87");                                 // İ -> i + U+0307
  BOOST_TEST(lowercase_en_us("\xE2\x84\xAA") == "k");                                      // Kelvin sign
  BOOST_TEST(lowercase_en_us("\xC3\x9F") == "\xC3\x9F");                                   // ß unchanged
}

BOOST_AUTO_TEST_CASE(another_session_is_found_without_writing_the_cache) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  BOOST_TEST(!store->has_session_other_than("a"));
  make_session(*store, "a", 100);
  BOOST_TEST(!store->has_session_other_than("a"));
  BOOST_TEST(store->has_session_other_than("b"));
  store->list_sessions();  // the cache as of now
  const std::string cache = cache_file(dir);
  BOOST_REQUIRE(!cache.empty());
  const std::string before = read_file(cache);
  make_session(*store, "b", 200);
  // Asked on the first prompt of every session: the cache (every row of the root) is not rewritten.
  BOOST_TEST(store->has_session_other_than("a"));
  BOOST_TEST(store->has_session_other_than("b"));
  BOOST_TEST(read_file(cache) == before);
  store->list_sessions();
  BOOST_TEST(read_file(cache) != before);  // a listing still writes it
}

BOOST_AUTO_TEST_CASE(newest_first_then_collated_ids) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  make_session(*store, "old", 100);
  make_session(*store, "B", 500);
  make_session(*store, "a", 500);
  make_session(*store, "\xC3\xA4", 500);
  make_session(*store, "A", 500);
  make_session(*store, "new", 900);
  auto expect = std::vector<std::string>{"new", "a", "A", "\xC3\xA4", "B", "old"};
  BOOST_TEST(ids(store->list_sessions()) == expect, boost::test_tools::per_element());
  // A new process (index file present) gives the same order and reads no log.
  auto again = open_store(dir, std::nullopt);
  BOOST_TEST(ids(again->list_sessions()) == expect, boost::test_tools::per_element());
  BOOST_TEST(again->index_files_read() == 0u);
  auto first = again->list_sessions().front();
  BOOST_TEST(*first.title == "title of new");
  BOOST_TEST(first.updatedAt == 912);  // time of the last event
  BOOST_TEST(first.header.createdAt == 900);
}

BOOST_AUTO_TEST_CASE(filters_and_keyset_pages) {
  TempDir dir;
  auto store = open_store(dir, Encoding::zstd);
  make_session(*store, "p1", 1, "/proj");
  make_session(*store, "p2", 2, "/proj/");
  make_session(*store, "q1", 3, "/other");
  make_session(*store, "n1", 4, std::nullopt);
  ListQuery q;
  q.cwd = "/proj/./";
  BOOST_TEST(ids(store->list_sessions(q)) == (std::vector<std::string>{"p2", "p1"}), boost::test_tools::per_element());
  ListQuery with_cwd;
  with_cwd.with_cwd_only = true;
  BOOST_TEST(ids(store->list_sessions(with_cwd)) == (std::vector<std::string>{"q1", "p2", "p1"}),
             boost::test_tools::per_element());
  ListQuery page;
  page.limit = 2;
  BOOST_TEST(ids(store->list_sessions(page)) == (std::vector<std::string>{"n1", "q1"}), boost::test_tools::per_element());
  page.after = std::make_pair(std::int64_t(3), std::string("q1"));
  BOOST_TEST(ids(store->list_sessions(page)) == (std::vector<std::string>{"p2", "p1"}), boost::test_tools::per_element());
  // The visitor sees the same rows in the same order and can stop early.
  std::vector<std::string> visited;
  store->visit_sessions({}, [&](const SessionListing& row) {
    visited.push_back(row.header.id);
    return visited.size() < 3;
  });
  BOOST_TEST(visited == (std::vector<std::string>{"n1", "q1", "p2"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(own_writes_keep_the_index_exact) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  make_session(*store, "s", 10);
  BOOST_TEST(*store->list_sessions().at(0).title == "title of s");
  {
    auto w = store->open("s");
    auto recs = w.append({events::session_title("renamed", 1)}, true);
    BOOST_TEST(recs.size() == 1u);
  }
  auto l = store->list_sessions();
  BOOST_TEST(*l.at(0).title == "renamed");
  BOOST_TEST(l.at(0).sizeBytes == std::filesystem::file_size(*store->find_log("s")));
  const std::uint64_t reads = store->index_files_read();
  store->list_sessions();
  BOOST_TEST(store->index_files_read() == reads);  // nothing changed: nothing read
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(listing_index)

BOOST_AUTO_TEST_CASE(notices_files_created_behind_its_back) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  make_session(*store, "mine", 10);
  BOOST_TEST(store->list_sessions().size() == 1u);
  // Another program drops a harness log into an existing bucket and one into a new bucket.
  const std::string id = install_fixture(dir, "multi-turn");
  write_file(store->log_path(make_header("foreign", "/p")),
             R"({"type":"session","version":0,"id":"foreign","createdAt":5,"cwd":"/p","delegationDepth":0})" "\n");
  auto l = store->list_sessions();
  BOOST_TEST(l.size() == 3u);
  BOOST_TEST(ids(l) == (std::vector<std::string>{id, "mine", "foreign"}), boost::test_tools::per_element());
  BOOST_TEST(*l[0].title == "Reply with exactly the word:");
  // ... and removes one.
  std::filesystem::remove(*store->find_log("foreign"));
  BOOST_TEST(store->list_sessions().size() == 2u);
}

BOOST_AUTO_TEST_CASE(startup_sweep_notices_appends_by_other_programs) {
  TempDir dir;
  {
    auto store = open_store(dir, Encoding::none);
    make_session(*store, "s", 10);
  }
  auto path = open_store(dir, std::nullopt)->find_log("s");
  append_file(*path, R"({"type":"session/title","seq":9,"time":99,"data":{"title":"from elsewhere","messageSeqs":[1],"source":{"kind":"fallback"}}})" "\n");
  auto store = open_store(dir, std::nullopt);
  auto l = store->list_sessions();
  BOOST_TEST(*l.at(0).title == "from elsewhere");
  BOOST_TEST(l.at(0).updatedAt == 99);
  BOOST_TEST(store->index_files_read() == 1u);  // only the changed file was read
}

BOOST_AUTO_TEST_CASE(rebuilds_from_a_deleted_or_corrupt_index_file) {
  TempDir dir;
  {
    auto store = open_store(dir, Encoding::none);
    for (int i = 0; i < 5; ++i) make_session(*store, "s" + std::to_string(i), 10 + i);
  }
  const std::string cache = cache_file(dir);
  BOOST_REQUIRE(!cache.empty());
  BOOST_TEST(file_mode(cache) == 0600u);
  std::filesystem::remove(cache);
  {
    auto store = open_store(dir, std::nullopt);
    BOOST_TEST(store->list_sessions().size() == 5u);
    BOOST_TEST(store->index_files_read() == 5u);
  }
  write_file(cache, "{\"version\":1,\"root\":");  // truncated garbage
  {
    auto store = open_store(dir, std::nullopt);
    auto l = store->list_sessions();
    BOOST_TEST(l.size() == 5u);
    BOOST_TEST(*l.at(0).title == "title of s4");
    BOOST_TEST(store->index_files_read() == 5u);
  }
  {
    auto store = open_store(dir, std::nullopt);  // the rewritten cache is used again
    BOOST_TEST(store->list_sessions().size() == 5u);
    BOOST_TEST(store->index_files_read() == 0u);
    store->rebuild_index();
    BOOST_TEST(store->index_files_read() == 5u);
    BOOST_TEST(store->list_sessions().size() == 5u);
  }
}

BOOST_AUTO_TEST_CASE(unlisted_logs_are_skipped) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  make_session(*store, "good", 10);
  install_fixture(dir, "no-delegation-depth");  // not a valid header: harness list() skips it
  write_file(store->log_path(make_header("empty", std::nullopt)), "");
  BOOST_TEST(ids(store->list_sessions()) == (std::vector<std::string>{"good"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
