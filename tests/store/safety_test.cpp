// Hostile session ids stay inside the root, symlinks are never followed out of it, and files and
// directories are private (0600 / 0700).
#include "support.hpp"

#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/layout.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

using namespace acp::store;
using namespace store_test;
namespace fs = std::filesystem;

namespace {

// Every regular file under `dir` (recursively), relative.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_ids)

BOOST_AUTO_TEST_CASE(ids_cannot_escape_the_root) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"../../etc", "..~002F..~002Fetc"}, {"a/b", "a~002Fb"}, {".", "~002E"}, {"..", "~002E~002E"},
      {"\xE6\x97\xA5\xE6\x9C\xAC/../x", "~65E5~672C~002F..~002Fx"}, {"~", "~007E"}, {"a\\b", "a~005Cb"},
      {"\xF0\x9F\x98\x80", "~D83D~DE00"},
  };
  const bool flat = store->generation() == Generation::flat;
  const std::string bucket = bucket_of(store->generation(), std::string("/work/project"));
  for (const auto& [id, encoded] : cases) {
    BOOST_TEST_CONTEXT(id) {
      {
        auto w = store->create(make_header(id));
        write_turn(w, "x");
      }
      // <bucket>/<encoded>.jsonl (45fc) or <project>/<encoded>/session.jsonl (0.1).
      const std::string expected = dir.path() + "/root/" + bucket + "/" + encoded + (flat ? ".jsonl" : "/session.jsonl");
      BOOST_TEST(*store->find_log(id) == expected);
      BOOST_TEST(store->read_log(id).header.id == id);
    }
  }
  // Only the logs and their lock files exist, all inside the bucket (project directory).
  auto files = files_under(dir / "root");
  BOOST_TEST(files.size() == cases.size() * 2);
  for (auto& f : files) BOOST_TEST(f.rfind(bucket + "/", 0) == 0u);
  BOOST_TEST(!path_exists(dir / "etc"));
  BOOST_TEST(store->list_sessions().size() == cases.size());
}

BOOST_AUTO_TEST_CASE(too_long_and_empty_ids_are_rejected_before_any_write) {
  TempDir dir;
  auto store = open_store(dir, Encoding::zstd);
  BOOST_CHECK_THROW(store->create(make_header(std::string(300, 'a'))), IdTooLong);
  BOOST_CHECK_THROW(store->find_log(std::string(300, 'a')), IdTooLong);
  BOOST_CHECK_THROW(store->create(make_header("")), InvalidSessionId);
  BOOST_CHECK_NO_THROW(store->create(make_header(std::string(227, 'a'))));
  BOOST_TEST(files_under(dir / "root").size() <= 1u);  // at most the lock file of the valid id
}

BOOST_AUTO_TEST_CASE(symlinks_are_not_followed_out_of_the_root) {
  TempDir dir;
  TempDir outside;
  const std::string secret = outside / "secret.jsonl";
  write_file(secret, R"({"type":"session","version":0,"id":"evil","createdAt":1,"cwd":"/p","delegationDepth":0})" "\n");
  auto store = open_store(dir, Encoding::none);
  { auto w = store->create(make_header("ok", "/p")); write_turn(w, "x"); }
  const Generation g = store->generation();
  // Where a log of id goes in this root's layout: <bucket>/<id>.jsonl, or <project>/<id>/session.jsonl.
  auto log_of = [&](const std::string& id) { return store->log_path(make_header(id, "/p")); };
  auto planted = [](const std::string& path) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    return path;
  };
  // A symlinked log inside a real bucket, and a whole symlinked bucket.
  BOOST_REQUIRE(::symlink(secret.c_str(), planted(log_of("evil")).c_str()) == 0);
  const std::string foreign_bucket = g == Generation::flat ? "cwd-000000000000" : "--elsewhere--";
  BOOST_REQUIRE(::symlink(outside.path().c_str(), (dir.path() + "/root/" + foreign_bucket).c_str()) == 0);
  write_file(outside / log_entry_name(g, "other", Encoding::none),
             R"({"type":"session","version":0,"id":"other","createdAt":1,"delegationDepth":0})" "\n");
  BOOST_TEST(!store->exists("evil"));
  BOOST_TEST(!store->exists("other"));
  BOOST_CHECK_THROW(store->read_log("evil"), SessionNotFound);
  BOOST_CHECK_THROW(store->open("evil"), SessionNotFound);
  auto again = open_store(dir, std::nullopt);
  BOOST_TEST(again->list_sessions().size() == 1u);
  // A symlink planted where a new session's log would go is not written through.
  BOOST_REQUIRE(::symlink(secret.c_str(), planted(log_of("new")).c_str()) == 0);
  const std::string before = read_file(secret);
  {
    auto w = store->create(make_header("fresh", "/p"));
    write_turn(w, "x");
  }
  BOOST_CHECK_THROW(store->create(make_header("new", "/p")).append({events::turn_start(1)}), StoreError);
  BOOST_TEST(read_file(secret) == before);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(file_modes)

BOOST_AUTO_TEST_CASE(files_are_0600_and_directories_0700) {
  for (Encoding enc : {Encoding::none, Encoding::zstd}) {
    TempDir dir;
    ::umask(0022);
    auto store = open_store(dir, enc);
    { auto w = store->create(make_header("s")); write_turn(w, "x"); }
    store->flush_index();
    const std::string log = *store->find_log("s");
    const std::string bucket = log.substr(0, log.rfind('/'));  // the 0.1 session directory
    BOOST_TEST(file_mode(dir / "root") == 0700u);
    BOOST_TEST(file_mode(bucket) == 0700u);
    if (store->generation() == Generation::project_dirs) BOOST_TEST(file_mode(bucket.substr(0, bucket.rfind('/'))) == 0700u);
    BOOST_TEST(file_mode(log) == 0600u);
    BOOST_TEST(file_mode(lock_file_of(*store, "s")) == 0600u);
    BOOST_TEST(file_mode(dir / "cache") == 0700u);
    // No temporary creation file is left behind.
    for (auto& e : fs::directory_iterator(bucket)) BOOST_TEST(e.path().extension() != ".tmp");
  }
}

BOOST_AUTO_TEST_SUITE_END()
