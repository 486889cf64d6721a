// The content index of a file root (store/content_index.hpp): built from the logs, ranked, kept
// up to date with our writes (without reading the log back) and with other instances' (read at
// query time), never answering with a deleted session, rebuilt when its file is damaged, and
// right after a process building it was killed. Real files, both encodings; the layout is the
// suite's (DSH_ACP_STORE_GENERATION).
#include "support.hpp"

#include "store/content_index.hpp"
#include "store/event_builders.hpp"
#include "store/errors.hpp"

#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

using namespace acp::store;
using namespace store_test;

namespace {

const Encoding kEncodings[] = {Encoding::none, Encoding::zstd};

std::vector<std::string> ids_of(const std::vector<ContentHit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.session_id);
  return out;
}

std::vector<ContentHit> search(SessionStore& s, const std::string& words, std::size_t limit = 10,
                               std::vector<std::string> exclude = {}) {
  ContentQuery q;
  q.words = words;
  q.limit = limit;
  q.exclude = std::move(exclude);
  return s.search_content(q);
}

void session(SessionStore& s, const std::string& id, const std::vector<std::string>& turns) {
  auto w = s.open_or_create(make_header(id));
  std::int64_t t = 5000;
  for (const auto& text : turns) write_turn(w, text, t += 10);
}

std::vector<std::string> index_files(const TempDir& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache", ec))
    if (e.path().extension() == ".sqlite") out.push_back(e.path().string());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(content_index)

BOOST_AUTO_TEST_CASE(builds_ranks_and_catches_up_only_what_changed) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    auto store = open_store(dir, enc);
    session(*store, "both", {"the kubernetes rollback failed twice", "kubernetes again"});
    session(*store, "one", {"a kubernetes question"});
    session(*store, "none", {"something about gardening"});
    IndexProgress p = store->index_content();
    BOOST_TEST(p.total == 3u);
    BOOST_TEST(p.indexed == 3u);
    BOOST_TEST(index_files(dir).size() == 1u);

    auto hits = search(*store, "Kubernetes ROLLBACK?");
    BOOST_TEST(ids_of(hits) == (std::vector<std::string>{"both", "one"}), boost::test_tools::per_element());
    BOOST_TEST(hits[0].score > hits[1].score);
    BOOST_TEST(text_kind_name(hits[0].kind) == "user");
    BOOST_TEST(hits[0].snippet == "the kubernetes rollback failed twice");
    // The hit names the event: seq 1 is the first turn's user/message.
    BOOST_TEST(hits[0].seq == 1);
    BOOST_TEST(ids_of(search(*store, "kubernetes rollback", 1)) == (std::vector<std::string>{"both"}),
               boost::test_tools::per_element());
    BOOST_TEST(ids_of(search(*store, "kubernetes rollback", 10, {"both"})) == (std::vector<std::string>{"one"}),
               boost::test_tools::per_element());
    BOOST_TEST(search(*store, "the of and").empty());  // no term survives
    // Words are terms, never query syntax.
    BOOST_TEST(search(*store, "NEAR(kubernetes) \"rollback* OR").size() == 2u);

    const std::uint64_t read = store->content_index()->logs_read();
    BOOST_TEST(store->index_content().indexed == 0u);
    search(*store, "gardening");
    BOOST_TEST(store->content_index()->logs_read() == read);  // nothing changed, nothing read
  }
}

BOOST_AUTO_TEST_CASE(a_word_with_underscores_is_found_by_the_index) {
  // The index's tokenizer splits at '_' and keeps no positions (no phrase queries): asked as one
  // quoted string, SQLite refuses the question and the search falls back to reading every log.
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  session(*store, "snake", {"the retry_policy lives in config.toml"});
  session(*store, "plain", {"a retry without any policy"});
  session(*store, "other", {"nothing to see"});
  auto hits = search(*store, "retry_policy");  // catches the index up with the listing
  BOOST_TEST(ids_of(hits) == (std::vector<std::string>{"snake", "plain"}), boost::test_tools::per_element());
  ContentQuery q;
  q.words = "where is retry_policy set";
  hits = store->content_index()->search(q, {});  // the index itself: throws where SQLite refuses
  BOOST_TEST(ids_of(hits) == (std::vector<std::string>{"snake", "plain"}), boost::test_tools::per_element());
  BOOST_TEST(hits[0].snippet == "the retry_policy lives in config.toml");
}

BOOST_AUTO_TEST_CASE(a_common_word_counted_on_its_newest_rows_still_ranks_below_a_rare_one) {
  // More rows hold "alpha" than the index counts (it estimates the rest), and far more than the
  // sessions asked for: the order is still by the terms each session holds, rarest first.
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  {
    auto w = store->create(make_header("many"));
    std::vector<NewEvent> turns;
    for (std::int64_t turn = 1; turn <= 2600; ++turn) {
      turns.push_back(events::turn_start(turn));
      turns.push_back(events::user_message("alpha filler " + std::to_string(turn)));
      turns.push_back(events::turn_end(turn, events::reason("completed")));
    }
    w.append(std::move(turns), true);
  }
  session(*store, "rare", {"zebra crossing"});
  session(*store, "both", {"alpha and zebra"});
  session(*store, "none", {"gamma"});
  auto hits = search(*store, "alpha zebra");
  BOOST_TEST(ids_of(hits) == (std::vector<std::string>{"both", "rare", "many"}), boost::test_tools::per_element());
  BOOST_TEST(hits[0].score > hits[1].score);
  BOOST_TEST(hits[1].score > hits[2].score);
  // Each session once, at its best row; the limit counts sessions, not rows.
  auto two = ids_of(search(*store, "alpha", 2));
  std::sort(two.begin(), two.end());
  BOOST_TEST(two == (std::vector<std::string>{"both", "many"}), boost::test_tools::per_element());
  BOOST_TEST(ids_of(search(*store, "alpha filler 2600")).front() == "many");
}

BOOST_AUTO_TEST_CASE(diacritics_fold_and_the_agent_and_tools_count) {
  TempDir dir;
  auto store = open_store(dir, Encoding::zstd);
  {
    auto w = store->create(make_header("cafe"));
    write_turn(w, "meet at the Café Müller");
  }
  auto hits = search(*store, "cafe muller");
  BOOST_TEST(ids_of(hits) == (std::vector<std::string>{"cafe"}), boost::test_tools::per_element());
  // write_turn's agent answers "Hello there": the agent's text is indexed too.
  hits = search(*store, "hello");
  BOOST_REQUIRE(hits.size() == 1u);
  BOOST_TEST(text_kind_name(hits[0].kind) == "agent");
}

BOOST_AUTO_TEST_CASE(our_commits_are_indexed_without_reading_the_log) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    auto store = open_store(dir, enc);
    session(*store, "s", {"first words about parsers"});
    BOOST_TEST(search(*store, "parsers").size() == 1u);  // opens the index
    ContentIndex* index = store->content_index();
    const std::uint64_t read = index->logs_read();
    {
      auto w = store->open("s");
      write_turn(w, "now the zeppelin arrives", 9000);
    }
    session(*store, "new", {"another zeppelin"});
    index->drain();
    BOOST_TEST(index->logs_read() == read);
    auto hits = search(*store, "zeppelin");
    BOOST_TEST(hits.size() == 2u);
    BOOST_TEST(index->logs_read() == read);  // the catch-up found every record current
    BOOST_TEST(search(*store, "parsers").size() == 1u);
  }
}

BOOST_AUTO_TEST_CASE(our_commits_index_every_kind_of_text_in_both_layouts) {
  // The writer hands over its lines in the layout's own shape (a 0.1 root writes the agent's text
  // elsewhere in the record): the indexer reads them as a scan would.
  for (Generation g : {Generation::flat, Generation::project_dirs}) {
    TempDir dir;
    auto store = open_store(dir, Encoding::none, g);
    session(*store, "s", {"first words about parsers"});
    BOOST_TEST(search(*store, "parsers").size() == 1u);  // opens the index
    ContentIndex* index = store->content_index();
    const std::uint64_t read = index->logs_read();
    session(*store, "new", {"another zeppelin"});
    index->drain();
    BOOST_TEST(index->logs_read() == read);
    // write_turn's agent answers "Hello there".
    auto hits = search(*store, "hello", 10, {"s"});
    BOOST_REQUIRE(hits.size() == 1u);
    BOOST_TEST(hits[0].session_id == "new");
    BOOST_TEST(text_kind_name(hits[0].kind) == "agent");
    BOOST_TEST(index->logs_read() == read);  // found through the writer's lines, not a read of the log
  }
}

BOOST_AUTO_TEST_CASE(a_question_of_many_words_still_finds_a_session_holding_only_common_ones) {
  // Only the rarest terms' sets are enumerated; a session holding none of those but a commoner
  // term still matches, after them.
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  session(*store, "common", {"kiwi"});
  for (int i = 0; i < 3; ++i) session(*store, "filler" + std::to_string(i), {"kiwi"});
  session(*store, "rare", {"alpha beta gamma delta epsilon zeta eta"});
  auto hits = search(*store, "alpha beta gamma delta epsilon zeta eta kiwi");
  BOOST_REQUIRE(hits.size() == 5u);
  BOOST_TEST(hits[0].session_id == "rare");
}

BOOST_AUTO_TEST_CASE(another_instances_appends_and_sessions_are_found) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    auto a = open_store(dir, enc);
    session(*a, "s", {"about compilers"});
    BOOST_TEST(search(*a, "compilers").size() == 1u);
    {
      // Another instance (as another process would): no index of its own open, so only the logs
      // tell `a` what it wrote.
      auto b = open_store(dir, enc);
      session(*b, "s", {"linkers too"});
      session(*b, "t", {"linkers only"});
    }
    BOOST_TEST(ids_of(search(*a, "linkers compilers")) == (std::vector<std::string>{"s", "t"}),
               boost::test_tools::per_element());
    {
      // One with the index open as well: two connections to one database.
      auto b = open_store(dir, enc);
      BOOST_TEST(search(*b, "linkers").size() == 2u);
      session(*b, "t", {"and loaders"});
      b->content_index()->drain();
    }
    BOOST_TEST(ids_of(search(*a, "loaders")) == (std::vector<std::string>{"t"}), boost::test_tools::per_element());
    BOOST_TEST(search(*a, "linkers").size() == 2u);  // nothing indexed twice: one hit per session
    a.reset();
    {
      auto b = open_store(dir, enc);
      session(*b, "s", {"assemblers"});
      session(*b, "t", {"assemblers"});
    }
    // A new instance over the index file: whatever changed while nobody watched is found.
    auto c = open_store(dir, enc);
    BOOST_TEST(ids_of(search(*c, "assemblers")).size() == 2u);
  }
}

BOOST_AUTO_TEST_CASE(a_deleted_session_is_never_returned) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    auto store = open_store(dir, enc);
    session(*store, "a", {"walrus"});
    session(*store, "b", {"walrus"});
    session(*store, "c", {"walrus"});
    BOOST_TEST(search(*store, "walrus").size() == 3u);
    store->delete_session("a");
    {
      auto other = open_store(dir, enc);
      other->delete_session("b");
    }
    BOOST_TEST(ids_of(search(*store, "walrus")) == (std::vector<std::string>{"c"}), boost::test_tools::per_element());
    // Created again under the same id: only the new words.
    session(*store, "a", {"narwhal"});
    BOOST_TEST(ids_of(search(*store, "walrus narwhal")) == (std::vector<std::string>{"a", "c"}),
               boost::test_tools::per_element());
    BOOST_TEST(ids_of(search(*store, "walrus")) == (std::vector<std::string>{"c"}), boost::test_tools::per_element());
    {
      // Deleted and written again by someone else between two searches: same id, same size, maybe
      // the same inode, other words.
      auto other = open_store(dir, enc);
      const std::uint64_t before = read_file(*other->find_log("c")).size();
      other->delete_session("c");
      session(*other, "c", {"wombat"});
      if (enc == Encoding::none) BOOST_TEST(read_file(*other->find_log("c")).size() == before);
    }
    BOOST_TEST(ids_of(search(*store, "walrus")).empty());
    BOOST_TEST(ids_of(search(*store, "wombat")) == (std::vector<std::string>{"c"}), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(a_log_rewritten_shorter_is_indexed_again) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    TempDir other_dir;
    auto store = open_store(dir, enc);
    session(*store, "s", {"original albatross", "more albatross", "still albatross"});
    BOOST_TEST(search(*store, "albatross").size() == 1u);
    {
      // The same session with other, fewer events (as a restored backup would be), in place.
      auto other = open_store(other_dir, enc, *held_generation(dir / "root"));
      session(*other, "s", {"replacement pelican"});
      const std::string shorter = read_file(*other->find_log("s"));
      const std::string path = *store->find_log("s");
      BOOST_REQUIRE(shorter.size() < read_file(path).size());
      write_file(path, shorter);
    }
    BOOST_TEST(search(*store, "albatross").empty());
    BOOST_TEST(ids_of(search(*store, "pelican")) == (std::vector<std::string>{"s"}), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(a_damaged_index_file_is_rebuilt) {
  for (const std::string damage : {"garbage", "truncated"}) {
    TempDir dir;
    {
      auto store = open_store(dir, Encoding::zstd);
      session(*store, "s", {"ocelot"});
      session(*store, "t", {"ocelot lynx"});
      store->index_content();
    }
    BOOST_REQUIRE(index_files(dir).size() == 1u);
    const std::string file = index_files(dir).front();
    std::filesystem::remove(file + "-wal");
    std::filesystem::remove(file + "-shm");
    const std::string bytes = read_file(file);
    write_file(file, damage == "garbage" ? std::string(bytes.size(), 'x') : bytes.substr(0, bytes.size() / 2));
    auto store = open_store(dir, Encoding::zstd);
    BOOST_TEST(ids_of(search(*store, "lynx ocelot")) == (std::vector<std::string>{"t", "s"}),
               boost::test_tools::per_element());
    BOOST_TEST(read_file(file).substr(0, 15) == "SQLite format 3");
  }
}

BOOST_AUTO_TEST_CASE(without_a_cache_directory_the_logs_are_scanned) {
  TempDir dir;
  StoreOptions o;
  o.root = dir / "root";
  o.default_generation = default_generation();
  SessionStore store(o);
  session(store, "s", {"quokka"});
  BOOST_TEST(store.content_index() == nullptr);
  BOOST_TEST(ids_of(search(store, "quokka")) == (std::vector<std::string>{"s"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_build_killed_mid_way_leaves_a_correct_index) {
  for (Encoding enc : kEncodings) {
    TempDir dir;
    constexpr int kSessions = 700;  // more than one transaction's worth (256)
    {
      auto store = open_store(dir, enc);
      for (int i = 0; i < kSessions; ++i) session(*store, "s" + std::to_string(i), {"common word" + std::to_string(i)});
      store->delete_session("s7");
    }
    int pipefd[2];
    BOOST_REQUIRE(::pipe(pipefd) == 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipefd[0]);
      try {
        auto store = open_store(dir, enc);
        store->index_content([&](const IndexProgress& p) {
          if (p.done > 0) (void)!::write(pipefd[1], "c", 1);  // a transaction was committed
        });
      } catch (...) {
      }
      ::_exit(0);
    }
    ::close(pipefd[1]);
    char c = 0;
    const bool committed = ::read(pipefd[0], &c, 1) == 1;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(pipefd[0]);
    BOOST_REQUIRE(committed);

    auto store = open_store(dir, enc);
    IndexProgress p = store->index_content();
    BOOST_TEST(p.total == std::size_t(kSessions - 1));
    BOOST_TEST(p.indexed < p.total);  // what was committed before the kill was kept
    auto hits = search(*store, "common", 1000);
    std::set<std::string> ids;
    for (const auto& h : hits) ids.insert(h.session_id);
    BOOST_TEST(hits.size() == std::size_t(kSessions - 1));  // one hit per session
    BOOST_TEST(ids.size() == std::size_t(kSessions - 1));
    BOOST_TEST(!ids.count("s7"));
    BOOST_TEST(ids_of(search(*store, "word123")) == (std::vector<std::string>{"s123"}),
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_SUITE_END()
