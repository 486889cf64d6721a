// Cross-process behaviour with real child processes (fork): a held lock gives SessionBusy after
// the timeout, deletion respects the lock, and two processes appending to one session alternately
// keep its seqs contiguous.
#include "support.hpp"

#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/layout.hpp"
#include "../common/proc_locks.hpp"

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <future>
#include <sstream>
#include <stop_token>
#include <thread>

using namespace acp::store;
using namespace store_test;
using namespace std::chrono;

namespace {

// A child that holds the session's lock file with a raw flock until the parent writes to `release`.
struct LockHolder {
  pid_t pid = -1;
  int release_fd = -1;

  explicit LockHolder(const std::string& lock_path) {
    int ready[2], rel[2];
    BOOST_REQUIRE(::pipe(ready) == 0 && ::pipe(rel) == 0);
    pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      ::close(rel[1]);
      int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0600);
      if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
      char c = 'r';
      (void)!::write(ready[1], &c, 1);
      (void)!::read(rel[0], &c, 1);  // EOF or a byte: release
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(rel[0]);
    char c;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    release_fd = rel[1];
  }
  ~LockHolder() { release(); }
  void release() {
    if (pid < 0) return;
    ::close(release_fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
};

std::string lock_path_of(SessionStore& store, const std::string& id) { return lock_file_of(store, id); }

} // namespace

BOOST_AUTO_TEST_SUITE(locking)

BOOST_AUTO_TEST_CASE(held_lock_gives_session_busy_after_two_seconds) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  { auto w = store->create(make_header("s")); write_turn(w, "hello"); }
  const std::string before = read_file(*store->find_log("s"));
  LockHolder holder(lock_path_of(*store, "s"));
  auto t0 = steady_clock::now();
  BOOST_CHECK_THROW(store->open("s"), SessionBusy);
  // The wait ends by the timeout, not sooner (how much later depends on the machine's load).
  auto waited = duration_cast<milliseconds>(steady_clock::now() - t0).count();
  BOOST_TEST(waited >= 1900);
  BOOST_TEST(read_file(*store->find_log("s")) == before);
  holder.release();
  BOOST_CHECK_NO_THROW(store->open("s"));
}

using acp::test::blocked_flocks_here;

BOOST_AUTO_TEST_CASE(a_stop_ends_a_lock_wait_at_once) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none, milliseconds(600000));  // never reached
  { auto w = store->create(make_header("s")); write_turn(w, "hello"); }
  LockHolder holder(lock_path_of(*store, "s"));
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] {
    try {
      store->open("s", LockWait{true, std::nullopt, stop.get_token()});
      return std::string("locked");
    } catch (const SessionBusy&) {
      return std::string("busy");
    }
  });
  // The waiter is inside flock() (the kernel lists it blocked) before the stop: the signal path,
  // not the check before waiting. (Waits for that state, reading /proc/locks between yields.)
  while (blocked_flocks_here() == 0) std::this_thread::yield();
  stop.request_stop();
  BOOST_TEST(waiting.get() == "busy");
  // A stop requested before the wait gives up without waiting too.
  BOOST_CHECK_THROW(store->open("s", LockWait{true, std::nullopt, stop.get_token()}), SessionBusy);
}

BOOST_AUTO_TEST_CASE(a_wait_counts_from_when_it_was_asked_for_and_may_not_wait_at_all) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none, milliseconds(600000));
  { auto w = store->create(make_header("s")); write_turn(w, "hello"); }
  LockHolder holder(lock_path_of(*store, "s"));
  BOOST_CHECK_THROW(store->open("s", LockWait{false, std::nullopt, {}}), SessionBusy);
  // Queued for longer than the timeout: one try, then busy.
  BOOST_CHECK_THROW(store->open("s", LockWait{true, steady_clock::now() - milliseconds(600001), {}}), SessionBusy);
  BOOST_CHECK_THROW(store->delete_session("s", LockWait{false, std::nullopt, {}}), SessionBusy);
  holder.release();
  BOOST_CHECK_NO_THROW(store->open("s", LockWait{false, std::nullopt, {}}));
}

BOOST_AUTO_TEST_CASE(delete_is_busy_while_another_process_writes) {
  TempDir dir;
  auto store = open_store(dir, Encoding::zstd, milliseconds(200));
  { auto w = store->create(make_header("s")); write_turn(w, "hello"); }
  {
    LockHolder holder(lock_path_of(*store, "s"));
    BOOST_CHECK_THROW(store->delete_session("s"), SessionBusy);
    BOOST_TEST(store->exists("s"));
  }
  store->delete_session("s");
  BOOST_TEST(!store->exists("s"));
}

BOOST_AUTO_TEST_CASE(writers_in_one_process_exclude_each_other) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none, milliseconds(100));
  auto w = store->create(make_header("s"));
  w.append({events::turn_start(1)});
  BOOST_CHECK_THROW(store->open("s"), SessionBusy);
  w.release();
  BOOST_CHECK_NO_THROW(store->open("s"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concurrency)

BOOST_AUTO_TEST_CASE(two_processes_appending_alternately_keep_seqs_contiguous) {
  for (Encoding enc : {Encoding::none, Encoding::zstd}) {
    TempDir dir;
    {
      auto store = open_store(dir, enc);
      auto w = store->create(make_header("shared"));
      // A closed turn: an open one would (rightly) be repaired with closers by the first writer.
      w.append({events::turn_start(1), events::turn_end(1, events::reason("completed"))}, true);
    }
    constexpr int kRounds = 40;
    // Writer k starts round i once the other has ended round i-1 (a byte on to[k]): neither runs
    // ahead, so the two alternate, and within a round they still race for the lock. A writer that
    // exits closes its end, and the other then goes on alone.
    int to[2][2];
    BOOST_REQUIRE(::pipe(to[0]) == 0 && ::pipe(to[1]) == 0);
    pid_t kids[2];
    for (int k = 0; k < 2; ++k) {
      kids[k] = ::fork();
      if (kids[k] == 0) {
        ::close(to[k][1]);
        ::close(to[1 - k][0]);
        ::signal(SIGPIPE, SIG_IGN);  // the other may be done: its round's byte then goes nowhere
        int code = 0;
        try {
          auto store = open_store(dir, std::nullopt, milliseconds(10000));  // each process has its own store
          for (int i = 0; i < kRounds; ++i) {
            char token;
            if (i > 0) while (::read(to[k][0], &token, 1) < 0 && errno == EINTR) {}
            auto w = store->open("shared");
            const std::int64_t first = w.next_seq();
            auto recs = w.append({events::text_delta(1, 1, k, "a"), events::text_delta(1, 1, k, "b"),
                                  events::text_delta(1, 1, k, "c")});
            if (recs.front().at("seq").as_int64() != first) code = 2;
            w.sync();
            w.release();
            (void)!::write(to[1 - k][1], "r", 1);
          }
        } catch (const std::exception&) {
          code = 1;
        }
        ::_exit(code);
      }
    }
    for (auto& p : to) {
      ::close(p[0]);
      ::close(p[1]);
    }
    for (pid_t pid : kids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    auto log = open_store(dir, std::nullopt)->read_log("shared");
    BOOST_TEST_MESSAGE("encoding " << int(enc) << " events " << log.events.size());
    BOOST_REQUIRE(log.events.size() == std::size_t(2 + 2 * kRounds * 3));
    int per_writer[2] = {0, 0};
    for (std::size_t i = 0; i < log.events.size(); ++i) {
      BOOST_TEST(log.events[i].at("seq").as_int64() == std::int64_t(i));
      if (i > 1) ++per_writer[log.events[i].at("data").at("chunk").at("index").as_int64()];
    }
    // Batches stay whole: each writer's three events are adjacent.
    for (std::size_t i = 2; i < log.events.size(); i += 3) {
      auto idx = log.events[i].at("data").at("chunk").at("index");
      BOOST_TEST(log.events[i + 1].at("data").at("chunk").at("index") == idx);
      BOOST_TEST(log.events[i + 2].at("data").at("chunk").at("index") == idx);
    }
    BOOST_TEST(per_writer[0] == kRounds * 3);
    BOOST_TEST(per_writer[1] == kRounds * 3);
  }
}

BOOST_AUTO_TEST_SUITE_END()
