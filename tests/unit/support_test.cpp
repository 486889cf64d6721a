// src/support: the one implementation of each small shared helper.
#include "../common/temp_dir.hpp"
#include "support/background_threads.hpp"
#include "support/hex.hpp"
#include "support/iso_time.hpp"
#include "support/json_number.hpp"
#include "support/log.hpp"
#include "support/file_io.hpp"
#include "support/paths.hpp"
#include "support/sha256.hpp"
#include "support/utf8.hpp"

#include <boost/asio/post.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <future>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

using namespace acp::support;

BOOST_AUTO_TEST_SUITE(support_iso_time)

BOOST_AUTO_TEST_CASE(formats_like_javascript_to_iso_string) {
  BOOST_TEST(iso_time(0) == "1970-01-01T00:00:00.000Z");
  BOOST_TEST(iso_time(1700000000123) == "2023-11-14T22:13:20.123Z");
}

BOOST_AUTO_TEST_CASE(times_before_1970_round_toward_the_past) {
  // new Date(-1).toISOString() === "1969-12-31T23:59:59.999Z"
  BOOST_TEST(iso_time(-1) == "1969-12-31T23:59:59.999Z");
  BOOST_TEST(iso_time(-1000) == "1969-12-31T23:59:59.000Z");
  BOOST_TEST(iso_time(-1001) == "1969-12-31T23:59:58.999Z");
  BOOST_TEST(iso_time(-86400000) == "1969-12-31T00:00:00.000Z");
}

BOOST_AUTO_TEST_CASE(extreme_times_are_clamped_to_four_digit_years) {
  BOOST_TEST(iso_time(std::numeric_limits<std::int64_t>::min()) == "0000-01-01T00:00:00.000Z");
  BOOST_TEST(iso_time(std::numeric_limits<std::int64_t>::max()) == "9999-12-31T23:59:59.999Z");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
// Decodes the whole text: code points, with each malformed subpart read as U+FFFD.
std::vector<char32_t> decode_all(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    auto d = decode_utf8(s, i);
    BOOST_REQUIRE(d.length >= 1 && i + d.length <= s.size());
    BOOST_TEST((d.valid == (d.cp != 0xFFFD || s.substr(i, 3) == "\xEF\xBF\xBD")));
    out.push_back(d.cp);
    i += d.length;
  }
  return out;
}
using cps = std::vector<char32_t>;
} // namespace

BOOST_AUTO_TEST_SUITE(support_utf8)

BOOST_AUTO_TEST_CASE(well_formed_sequences_decode) {
  BOOST_TEST(decode_all("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == (cps{'a', 0xE9, 0x20AC, 0x1F600}));
  BOOST_TEST(decode_all("\xF4\x8F\xBF\xBF") == (cps{0x10FFFF}));
  BOOST_TEST(valid_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  BOOST_TEST(valid_utf8(""));
}

BOOST_AUTO_TEST_CASE(malformed_input_follows_the_maximal_subpart_rule) {
  // Same results as new TextDecoder().decode() in JavaScript.
  BOOST_TEST(decode_all("\x80") == (cps{0xFFFD}));                      // lone continuation
  BOOST_TEST(decode_all("\xC0\xAF") == (cps{0xFFFD, 0xFFFD}));          // overlong lead
  BOOST_TEST(decode_all("\xE0\x80\xAF") == (cps{0xFFFD, 0xFFFD, 0xFFFD}));  // overlong 3-byte
  BOOST_TEST(decode_all("\xED\xA0\x80") == (cps{0xFFFD, 0xFFFD, 0xFFFD}));  // surrogate
  BOOST_TEST(decode_all("\xF4\x90\x80\x80") == (cps{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}));  // > U+10FFFF
  BOOST_TEST(decode_all("\xE2\x82") == (cps{0xFFFD}));                  // truncated: one U+FFFD
  BOOST_TEST(decode_all("\xE2\x82" "a") == (cps{0xFFFD, 'a'}));
  BOOST_TEST(decode_all("\xF0\x9F\x98") == (cps{0xFFFD}));
  BOOST_TEST(decode_all("\xFF\xFE") == (cps{0xFFFD, 0xFFFD}));
  for (const char* bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xE2\x82", "a\xFF"}) BOOST_TEST(!valid_utf8(bad));
}

BOOST_AUTO_TEST_CASE(boundaries_never_split_a_code_point) {
  const std::string s = "a\xE2\x82\xAC" "b\xF0\x9F\x98\x80";  // a € b 😀
  const std::size_t floors[] = {0, 1, 1, 1, 4, 5, 5, 5, 5, 9};
  const std::size_t ceils[] = {0, 1, 4, 4, 4, 5, 9, 9, 9, 9};
  for (std::size_t pos = 0; pos <= s.size(); ++pos) {
    BOOST_TEST(utf8_floor(s, pos) == floors[pos], "floor at " << pos);
    BOOST_TEST(utf8_ceil(s, pos) == ceils[pos], "ceil at " << pos);
  }
  BOOST_TEST(utf8_floor(s, 100) == s.size());
  BOOST_TEST(utf8_ceil(s, 100) == s.size());
  BOOST_TEST(utf8_floor("", 0) == 0u);
  // A 4-byte character right at the end, and one whose last byte is missing.
  BOOST_TEST(utf8_floor("ab\xF0\x9F\x98\x80", 5) == 2u);
  BOOST_TEST(utf8_floor("ab\xF0\x9F\x98", 4) == 2u);   // truncated: the maximal subpart stays whole
  BOOST_TEST(utf8_ceil("ab\xF0\x9F\x98", 3) == 5u);
}

BOOST_AUTO_TEST_CASE(boundaries_in_malformed_input_follow_the_decoder) {
  // Stray continuation bytes are units of their own; an invalid lead ends its unit at once.
  for (std::size_t pos = 0; pos <= 5; ++pos) BOOST_TEST(utf8_floor("\x80\x80\x80\x80\x80", pos) == pos);
  BOOST_TEST(utf8_floor("\xFF\x80", 1) == 1u);
  BOOST_TEST(utf8_floor("\xC0\xAF", 1) == 1u);          // overlong: two U+FFFD
  BOOST_TEST(utf8_floor("\xED\xA0\x80", 1) == 1u);     // surrogate: three U+FFFD
  BOOST_TEST(utf8_floor("\xED\xA0\x80", 2) == 2u);
  BOOST_TEST(utf8_floor("\xE2\x82" "a", 1) == 0u);      // truncated, then ASCII
  BOOST_TEST(utf8_floor("\xE2\x82" "a", 2) == 2u);
  // Property: a cut at any boundary leaves pieces that decode to the whole's code points.
  std::uint32_t seed = 12345;
  auto next = [&] { return (seed = seed * 1664525u + 1013904223u) >> 24; };
  const unsigned char pool[] = {'a', 0x80, 0xBF, 0xC2, 0xC0, 0xE0, 0xE2, 0xED, 0xA0, 0xF0, 0xF4, 0x90, 0x9F, 0xFF};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    for (int i = 0; i < 12; ++i) text.push_back(static_cast<char>(pool[next() % sizeof pool]));
    const auto whole = decode_all(text);
    for (std::size_t pos = 0; pos <= text.size(); ++pos) {
      const std::size_t lo = utf8_floor(text, pos), hi = utf8_ceil(text, pos);
      BOOST_TEST_REQUIRE((lo <= pos && pos <= hi && pos - lo <= 3 && hi - pos <= 3));
      for (std::size_t cut : {lo, hi}) {
        auto joined = decode_all(std::string_view(text).substr(0, cut));
        auto tail = decode_all(std::string_view(text).substr(cut));
        joined.insert(joined.end(), tail.begin(), tail.end());
        BOOST_TEST_REQUIRE((joined == whole));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bytes_from_outside_become_text) {
  // Unicode's own example of maximal subparts (table 3-8), as TextDecoder reads it.
  std::string s = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  BOOST_TEST(first_invalid_utf8(s) == 1u);
  BOOST_TEST(replace_invalid_utf8(s));
  const std::string r = "\xEF\xBF\xBD";
  BOOST_TEST(s == "a" + r + r + r + "b" + r + "c" + r + r + "d");
  // Well-formed text is left alone; a bad byte after a long ASCII run is found (8 bytes at a time).
  std::string ok = "plain ascii, caf\xC3\xA9, \xF0\x9F\x98\x80";
  BOOST_TEST(!replace_invalid_utf8(ok));
  BOOST_TEST(ok == "plain ascii, caf\xC3\xA9, \xF0\x9F\x98\x80");
  BOOST_TEST(first_invalid_utf8(std::string(37, 'x') + "\xFF") == 37u);
  BOOST_TEST(first_invalid_utf8(std::string(37, 'x')) == 37u);
  BOOST_TEST(valid_utf8_text("A\xFF" "B\xE2\x82") == "A" + r + "B" + r);
  BOOST_TEST(valid_utf8_text("\xED\xA0\x80\xC0\xAF") == r + r + r + r + r);  // a surrogate, an overlong form
  // Property: the result is valid and reads as the same code points as the input did.
  std::uint32_t seed = 777;
  auto next = [&] { return (seed = seed * 1664525u + 1013904223u) >> 24; };
  const unsigned char pool[] = {'a', 0x80, 0xBF, 0xC2, 0xC3, 0xA9, 0xE0, 0xE2, 0x82, 0xAC, 0xED, 0xA0, 0xF0, 0x9F, 0xFF};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    for (int i = 0; i < 16; ++i) text.push_back(static_cast<char>(pool[next() % sizeof pool]));
    const std::string fixed = valid_utf8_text(text);
    BOOST_TEST_REQUIRE(valid_utf8(fixed));
    BOOST_TEST_REQUIRE((decode_all(fixed) == decode_all(text)));
  }
}

BOOST_AUTO_TEST_SUITE_END()

// The process log quotes what others wrote (a server's stderr, a file name): its lines stay text.
BOOST_AUTO_TEST_SUITE(support_log)

BOOST_AUTO_TEST_CASE(log_lines_are_text) {
  acp::test::TempDir dir("dsh-log");
  const std::string path = dir / "x.log";
  BOOST_REQUIRE(acp::log::init(path, acp::log::Level::info) >= 0);
  acp::log::warn("MCP server \"s\" failed; its stderr ends with: A\xFF" "B\nnext");
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string line = text.str();
  BOOST_TEST(valid_utf8(line), line);
  BOOST_TEST(line.find("ends with: A\xEF\xBF\xBD" "B next\n") != std::string::npos, line);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support_hex)

BOOST_AUTO_TEST_CASE(encodes_bytes_and_fixed_width_values) {
  BOOST_TEST(hex_encode(std::string("\x00\x01\xAB\xFF", 4)) == "0001abff");
  BOOST_TEST(hex_encode("") == "");
  std::string out;
  append_hex(out, 0x1F, 4);
  append_hex(out, 0xD83D, 4, HexCase::upper);
  append_hex(out, 0x7, 1);
  BOOST_TEST(out == "001fD83D7");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support_paths)

BOOST_AUTO_TEST_CASE(absolute_paths_start_with_a_slash) {
  BOOST_TEST(is_absolute_path("/"));
  BOOST_TEST(is_absolute_path("/work/x"));
  BOOST_TEST(!is_absolute_path(""));
  BOOST_TEST(!is_absolute_path("relative/dir"));
  BOOST_TEST(!is_absolute_path("./x"));
}

BOOST_AUTO_TEST_CASE(make_dirs_creates_every_missing_level_with_the_mode) {
  acp::test::TempDir tmp("dsh-support");
  const std::string& base = tmp.path();
  const std::string deep = base + "/a/b/c";
  BOOST_TEST(make_dirs(deep, 0700));
  BOOST_TEST(make_dirs(deep, 0700));  // existing: still success
  struct stat st {};
  BOOST_TEST(::stat(deep.c_str(), &st) == 0);
  BOOST_TEST(S_ISDIR(st.st_mode));
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  BOOST_TEST(make_parent_dirs(base + "/p/q/file.log", 0700));
  BOOST_TEST(::stat((base + "/p/q").c_str(), &st) == 0);
  BOOST_TEST(!make_dirs("", 0700));
}

// A durable caller learns each parent whose entry was made, top down; what is in the way is
// named, with ENOTDIR, whether it is the last level or one above it.
BOOST_AUTO_TEST_CASE(make_dirs_reports_each_level_made_and_what_is_in_the_way) {
  acp::test::TempDir tmp("dsh-support");
  const std::string& base = tmp.path();
  std::vector<std::string> parents;
  const DirMade note = [&](const std::string& parent) { parents.push_back(parent); };
  BOOST_TEST(make_dirs(base + "/a/b", 0700, note));
  BOOST_TEST((parents == std::vector<std::string>{base, base + "/a"}), boost::test_tools::per_element());
  parents.clear();
  BOOST_TEST(make_dirs(base + "/a/b", 0700, note));  // all there: nothing made, one stat
  BOOST_TEST(parents.empty());
  std::ofstream(base + "/file") << "x";
  std::string failed;
  errno = 0;
  BOOST_TEST(!make_dirs(base + "/file", 0700, note, &failed));
  BOOST_TEST(errno == ENOTDIR);
  BOOST_TEST(failed == base + "/file");
  failed.clear();
  BOOST_TEST(!make_dirs(base + "/file/below/deeper", 0700, note, &failed));
  BOOST_TEST(errno == ENOTDIR);
  BOOST_TEST(failed == base + "/file");
  BOOST_TEST(parents.empty());
  // A symbolic link to a directory is followed (a home directory may be one).
  std::filesystem::create_directory_symlink(base + "/a", base + "/link");
  BOOST_TEST(make_dirs(base + "/link/c", 0700, note));
  BOOST_TEST((parents == std::vector<std::string>{base + "/link"}), boost::test_tools::per_element());
  BOOST_TEST(std::filesystem::is_directory(base + "/a/c"));
}

BOOST_AUTO_TEST_CASE(whole_writes_and_directory_syncs_report_their_errno) {
  acp::test::TempDir tmp("dsh-support");
  const std::string path = tmp.path() + "/data";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  BOOST_REQUIRE(fd);
  const std::string big(3 << 20, 'a');
  BOOST_TEST(write_all(fd.get(), big) == 0);
  BOOST_TEST(pwrite_all(fd.get(), "bcd", 1) == 0);
  std::ifstream in(path, std::ios::binary);
  const std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE_EQUAL(back.size(), big.size());
  BOOST_TEST(back.substr(0, 5) == "abcda");
  const UniqueFd read_only(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  BOOST_TEST(write_all(read_only.get(), "x") == EBADF);
  BOOST_TEST(pwrite_all(read_only.get(), "x", 0) == EBADF);
  BOOST_TEST(!fsync_dir(AT_FDCWD, tmp.path().c_str()));
  const IoFailure missing = fsync_dir(AT_FDCWD, (tmp.path() + "/missing").c_str());
  BOOST_TEST(missing.error == ENOENT);
  BOOST_TEST(std::string(missing.what) == "open directory");
  std::filesystem::create_directory_symlink(tmp.path(), tmp.path() + "/link");
  BOOST_TEST(!fsync_dir(AT_FDCWD, (tmp.path() + "/link").c_str()));
  BOOST_TEST(fsync_dir(AT_FDCWD, (tmp.path() + "/link").c_str(), O_NOFOLLOW).error != 0);
  // Relative to a descriptor opened O_PATH, which cannot be fsynced itself.
  const UniqueFd dir(::open(tmp.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  BOOST_TEST(!fsync_dir(dir.get(), "."));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support_sha256)

std::string hex_of(const Sha256::Digest& d) {
  return hex_encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

BOOST_AUTO_TEST_CASE(fips_180_examples) {
  BOOST_TEST(hex_of(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(hex_of(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(hex_of(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1'000'000, 'a');
  BOOST_TEST(hex_of(sha256(million)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  BOOST_TEST(hex_of(detail::sha256_portable(million)) == hex_of(sha256(million)));
}

BOOST_AUTO_TEST_CASE(any_split_and_both_implementations_agree) {
  std::string text;
  for (int i = 0; i < 300; ++i) text.push_back(char(i * 7 + 3));
  for (std::size_t n = 0; n <= text.size(); n += 1 + n / 8) {  // lengths around every block boundary
    const std::string_view whole = std::string_view(text).substr(0, n);
    const Sha256::Digest once = sha256(whole);
    BOOST_TEST(hex_of(detail::sha256_portable(whole)) == hex_of(once));
    for (std::size_t cut = 0; cut <= n; cut += 1 + cut / 4) {
      Sha256 running;
      running.update(whole.substr(0, cut));
      (void)running.digest();  // a digest along the way leaves the running state alone
      running.update(whole.substr(cut));
      BOOST_TEST(hex_of(running.digest()) == hex_of(once), "length " << n << ", cut at " << cut);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support_background_threads)

int thread_nice() { return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid))); }

BOOST_AUTO_TEST_CASE(work_runs_at_lowered_priority_and_the_caller_keeps_its_own) {
  const int mine = thread_nice();
  std::promise<int> seen;
  auto nice = seen.get_future();
  {
    acp::support::BackgroundThreads threads(2);
    boost::asio::post(threads.executor(), [&] { seen.set_value(thread_nice()); });
  }  // the destructor ran the queued work and joined
  BOOST_TEST(nice.get() == std::min(mine + 10, 19));
  BOOST_TEST(thread_nice() == mine);
}

long this_thread_id() { return ::syscall(SYS_gettid); }

/// The ids of this process's threads now.
std::set<long> thread_ids() {
  std::set<long> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    out.insert(std::stol(entry.path().filename().string()));
  return out;
}

BOOST_AUTO_TEST_CASE(threads_start_with_the_first_work_not_before) {
  acp::support::BackgroundThreads threads(3);
  const boost::asio::any_io_executor executor = threads.executor();
  const std::set<long> before = thread_ids();  // constructed, executor handed out, nothing posted
  std::promise<long> ran;
  boost::asio::post(executor, [&] { ran.set_value(this_thread_id()); });
  const long worker = ran.get_future().get();
  BOOST_TEST(worker != this_thread_id());
  BOOST_TEST(!before.contains(worker));
}

/// Whether SIGTERM is blocked on a thread of BackgroundThreads(1, false, block_signals).
bool worker_blocks_sigterm(bool block_signals) {
  std::promise<bool> blocked;
  {
    acp::support::BackgroundThreads threads(1, /*lowered=*/false, block_signals);
    boost::asio::post(threads.executor(), [&] {
      sigset_t now;
      ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
      blocked.set_value(::sigismember(&now, SIGTERM) == 1);
    });
  }
  return blocked.get_future().get();
}

BOOST_AUTO_TEST_CASE(workers_block_signals_when_asked_and_the_caller_keeps_its_mask) {
  sigset_t mine;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mine);
  BOOST_REQUIRE(::sigismember(&mine, SIGTERM) == 0);
  BOOST_TEST(worker_blocks_sigterm(true));
  BOOST_TEST(!worker_blocks_sigterm(false));  // the constructor's mask: a lock wait's signal reaches it
  // ... even when the first work comes from a thread that blocks every signal.
  std::promise<bool> blocked;
  {
    acp::support::BackgroundThreads unblocked(1, /*lowered=*/false);
    acp::support::BackgroundThreads blocking(1, /*lowered=*/false, /*block_signals=*/true);
    boost::asio::post(blocking.executor(), [&] {
      boost::asio::post(unblocked.executor(), [&] {
        sigset_t now;
        ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
        blocked.set_value(::sigismember(&now, SIGTERM) == 1);
      });
    });
    blocking.join();
  }
  BOOST_TEST(!blocked.get_future().get());
  sigset_t after;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &after);
  BOOST_TEST(::sigismember(&after, SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(queued_work_finishes_before_the_threads_are_joined) {
  int done = 0;
  {
    acp::support::BackgroundThreads threads(1);
    for (int i = 0; i < 100; ++i) boost::asio::post(threads.executor(), [&] { ++done; });
  }
  BOOST_TEST(done == 100);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support_json_integer)

namespace json = boost::json;

BOOST_AUTO_TEST_CASE(integers_of_every_kind_within_range) {
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  BOOST_TEST(*json_integer(json::value(kMin)) == kMin);
  BOOST_TEST(*json_integer(json::value(kMax)) == kMax);
  BOOST_TEST(*json_integer(json::value(std::uint64_t(kMax))) == kMax);
  BOOST_TEST(!json_integer(json::value(std::uint64_t(kMax) + 1)));     // uint64 beyond int64
  BOOST_TEST(!json_integer(json::value(std::numeric_limits<std::uint64_t>::max())));
  BOOST_TEST(*json_integer(json::value(-5), -5, 5) == -5);
  BOOST_TEST(!json_integer(json::value(-6), -5, 5));
  BOOST_TEST(!json_integer(json::value(6), -5, 5));
  BOOST_TEST(!json_integer(json::value(std::uint64_t(6)), -5, 5));
  BOOST_TEST(!json_integer(json::value(std::uint64_t(0)), -5, -1));  // a negative-only range
  BOOST_TEST(!json_integer(json::value(-1), 1));                       // negative where counts are asked
}

BOOST_AUTO_TEST_CASE(doubles_only_when_integral_and_exact) {
  BOOST_TEST(*json_integer(json::value(2.0)) == 2);
  BOOST_TEST(*json_integer(json::value(-0.0)) == 0);
  BOOST_TEST(*json_integer(json::value(-7.0)) == -7);
  BOOST_TEST(*json_integer(json::value(9007199254740991.0)) == 9007199254740991);
  BOOST_TEST(*json_integer(json::value(-9007199254740991.0)) == -9007199254740991);
  BOOST_TEST(!json_integer(json::value(9007199254740992.0)));  // 2^53: which integer did the text spell?
  BOOST_TEST(!json_integer(json::value(1.5)));
  BOOST_TEST(!json_integer(json::value(-0.5)));
  BOOST_TEST(!json_integer(json::value(1e300)));                // far beyond int64: no UB, no value
  BOOST_TEST(!json_integer(json::value(-1e300)));
  BOOST_TEST(!json_integer(json::value(9223372036854775808.0)));
  BOOST_TEST(!json_integer(json::value(std::numeric_limits<double>::quiet_NaN())));
  BOOST_TEST(!json_integer(json::value(std::numeric_limits<double>::infinity())));
  BOOST_TEST(!json_integer(json::value(-std::numeric_limits<double>::infinity())));
  BOOST_TEST(!json_integer(json::value(5.0), 6));
  BOOST_TEST(!json_integer(json::value(-1.0), 0));
}

BOOST_AUTO_TEST_CASE(anything_else_is_no_integer) {
  BOOST_TEST(!json_integer(json::value("1")));
  BOOST_TEST(!json_integer(json::value(true)));
  BOOST_TEST(!json_integer(json::value(nullptr)));
  BOOST_TEST(!json_integer(json::value(json::array{1})));
}

BOOST_AUTO_TEST_SUITE_END()
