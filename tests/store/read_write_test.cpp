// Raw and zstd round trips through the writer API, torn raw tails, corruption rules of scanLog
// (docs/store-format.md#crash-repair), root encoding detection, deletion, titles and packed chunk rows
// (docs/store-format.md#packed-chunk-rows).
#include "support.hpp"

#include "support/json_text.hpp"
#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/file_io.hpp"
#include "store/log_source.hpp"
#include "store/layout.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>

using namespace acp::store;
using namespace store_test;
namespace json = boost::json;
using acp::support::to_json_text;

namespace {

// A finished two-turn raw session; returns its path.
std::string two_turn_raw(const TempDir& dir, const std::string& id = "s") {
  auto store = open_store(dir, Encoding::none);
  auto w = store->create(make_header(id));
  write_turn(w, "first prompt here", 5000);
  write_turn(w, "second prompt", 6000);
  return w.path();
}


} // namespace

BOOST_AUTO_TEST_SUITE(read_write)

BOOST_AUTO_TEST_CASE(raw_round_trip_is_byte_exact) {
  TempDir dir;
  // The 45fc layout, whose lines are the records as they are (a 0.1 root rewrites them into 0.1.1's
  // shapes: generation_test checks those both ways).
  auto store = open_store(dir, Encoding::none, Generation::flat);
  auto w = store->create(make_header("s1", "/work/p", 42));
  BOOST_TEST(!w.on_disk());
  BOOST_TEST(!path_exists(w.path()));  // lazy: nothing before the first append
  auto first = w.append({events::turn_start(1), events::user_message("hello world")});
  BOOST_TEST(w.on_disk());
  BOOST_TEST(first.at(0).at("seq").as_int64() == 0);
  BOOST_TEST(first.at(1).at("seq").as_int64() == 1);
  w.release();

  BOOST_TEST(w.path() == dir.path() + "/root/" + bucket_name(std::string("/work/p")) + "/s1.jsonl");
  auto lines = split_lines(read_file(w.path()));
  BOOST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(lines[0] == R"({"type":"session","version":0,"id":"s1","createdAt":42,"cwd":"/work/p","delegationDepth":0})");
  BOOST_TEST(lines[1] == to_json_text(first[0]));
  BOOST_TEST(lines[2] == to_json_text(first[1]));

  auto log = store->read_log("s1");
  BOOST_TEST(log.header.id == "s1");
  BOOST_TEST(*log.header.cwd == "/work/p");
  BOOST_REQUIRE(log.events.size() == 2u);
  BOOST_TEST(to_json_text(log.events[1]) == lines[2]);
}

BOOST_AUTO_TEST_CASE(seqs_continue_across_writers_and_processes_of_the_store) {
  TempDir dir;
  two_turn_raw(dir);
  auto store = open_store(dir, std::nullopt);  // a new store instance: reads the file
  BOOST_TEST((store->encoding() == Encoding::none));
  auto w = store->open("s");
  BOOST_TEST(w.next_seq() == 17);  // 9 events in turn 1 (with title), 8 in turn 2
  BOOST_TEST(w.last_turn() == 2);
  BOOST_REQUIRE(w.title());
  BOOST_TEST(w.title()->title == "first prompt here");
  write_turn(w, "third", 7000);
  w.release();
  auto log = store->read_log("s");
  BOOST_REQUIRE(log.events.size() == 25u);
  for (std::size_t i = 0; i < log.events.size(); ++i) BOOST_TEST(log.events[i].at("seq").as_int64() == std::int64_t(i));
}

BOOST_AUTO_TEST_CASE(batches_must_continue_the_log) {
  TempDir dir;
  auto store = open_store(dir, Encoding::none);
  auto w = store->create(make_header("s"));
  w.append({events::turn_start(1)});
  auto rec = event_record("turn/end", 5, 1, json::object{}, std::nullopt, std::nullopt);
  BOOST_CHECK_THROW(w.append_records(std::vector<json::object>{rec}), InvalidBatch);
  rec["seq"] = 1;
  BOOST_CHECK_NO_THROW(w.append_records(std::vector<json::object>{rec}));
  NewEvent bad{"turn/start", json::object{}, json::value("append"), std::nullopt, std::nullopt};
  BOOST_CHECK_THROW(w.append({bad}), InvalidBatch);
  NewEvent missing{"user/message", json::object{}, std::nullopt, std::nullopt, std::nullopt};
  BOOST_CHECK_THROW(w.append({missing}), InvalidBatch);
  BOOST_TEST(w.next_seq() == 2);
}

BOOST_AUTO_TEST_CASE(torn_raw_tail_is_ignored_by_readers_and_repaired_by_writers) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  const std::string intact = read_file(path);
  append_file(path, R"({"type":"turn/start","seq":17,"ti)");
  auto store = open_store(dir, std::nullopt);
  BOOST_TEST(store->read_log("s").events.size() == 17u);
  BOOST_TEST(read_file(path).size() > intact.size());  // readers never modify
  {
    auto w = store->open("s");
    BOOST_TEST(w.next_seq() == 17);
  }
  BOOST_TEST(read_file(path) == intact);  // truncated to the committed bytes, nothing added (no open turn)
}

BOOST_AUTO_TEST_CASE(damage_before_the_last_turn_end_is_corruption_naming_file_and_line) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  auto lines = split_lines(read_file(path));
  lines[5] = "{not json";
  std::string damaged;
  for (auto& l : lines) damaged += l + "\n";
  write_file(path, damaged);
  auto store = open_store(dir, std::nullopt);
  try {
    store->read_log("s");
    BOOST_FAIL("expected StoreCorrupt");
  } catch (const StoreCorrupt& e) {
    BOOST_TEST(e.file() == path);
    BOOST_TEST(e.line() == 6);
    BOOST_TEST(std::string(e.what()).rfind(path + ":6: unparsable line", 0) == 0);
  }
  BOOST_CHECK_THROW(store->open("s"), StoreCorrupt);
  BOOST_CHECK_THROW(store->read_surface("s"), StoreCorrupt);
  BOOST_TEST(read_file(path) == damaged);  // never modified
}

// 0.1.1 refuses a header carrying its retired policy fields; so do we, naming line 1, and leave the log alone.
BOOST_AUTO_TEST_CASE(a_header_with_retired_policy_keys_is_corruption) {
  for (const char* key : {"sandboxMode", "approvalPolicy"}) {
    BOOST_TEST_CONTEXT(key) {
      TempDir dir;
      std::string path = two_turn_raw(dir);
      auto lines = split_lines(read_file(path));
      json::value header = json::parse(lines[0]);
      header.as_object()[key] = "workspace-write";
      lines[0] = to_json_text(header);
      std::string damaged;
      for (auto& l : lines) damaged += l + "\n";
      write_file(path, damaged);
      auto store = open_store(dir, std::nullopt);
      try {
        store->read_log("s");
        BOOST_FAIL("expected StoreCorrupt");
      } catch (const StoreCorrupt& e) {
        BOOST_TEST(e.line() == 1);
        BOOST_TEST(std::string(e.what()).find("sandboxMode/approvalPolicy") != std::string::npos);
      }
      BOOST_CHECK_THROW(store->open("s"), StoreCorrupt);
      BOOST_TEST(read_file(path) == damaged);  // never modified
    }
  }
}

BOOST_AUTO_TEST_CASE(seq_gap_before_the_last_turn_end_is_corruption) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  auto lines = split_lines(read_file(path));
  json::value v = json::parse(lines[3]);
  v.as_object()["seq"] = 99;
  lines[3] = to_json_text(v);
  std::string damaged;
  for (auto& l : lines) damaged += l + "\n";
  write_file(path, damaged);
  auto store = open_store(dir, std::nullopt);
  try {
    store->read_log("s");
    BOOST_FAIL("expected StoreCorrupt");
  } catch (const StoreCorrupt& e) {
    BOOST_TEST(e.line() == 4);
    BOOST_TEST(e.reason() == "event seq 99 is not contiguous; expected 2");
  }
}

BOOST_AUTO_TEST_CASE(damage_after_the_last_turn_end_ends_the_committed_prefix) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  const std::string intact = read_file(path);
  // A garbage line, then a well-formed event: both are after the last turn/end.
  append_file(path, "garbage\n" + std::string(R"({"type":"turn/start","seq":20,"time":1,"data":{"turn":3}})") + "\n");
  auto store = open_store(dir, std::nullopt);
  BOOST_TEST(store->read_log("s").events.size() == 17u);
  { auto w = store->open("s"); }
  BOOST_TEST(read_file(path) == intact);
}

BOOST_AUTO_TEST_CASE(legacy_and_unsupported_logs_are_corrupt) {
  auto check = [](const std::string& header, const std::string& event, std::int64_t line, const std::string& why) {
    TempDir dir;
    std::string path = dir.path() + "/root/" + bucket_name(std::string("/w")) + "/x.jsonl";
    std::string text = header + "\n" + event + (event.empty() ? "" : "\n");
    write_file(path, text);
    auto store = open_store(dir, std::nullopt);
    try {
      store->read_log("x");
      BOOST_FAIL("expected StoreCorrupt for " + why);
    } catch (const StoreCorrupt& e) {
      BOOST_TEST(e.line() == line);
      BOOST_TEST(e.reason() == why);
    }
    BOOST_CHECK_THROW(store->open("x"), StoreCorrupt);
    BOOST_TEST(read_file(path) == text);
  };
  const std::string h = R"({"type":"session","version":0,"id":"x","createdAt":1,"cwd":"/w","delegationDepth":0})";
  check(R"({"type":"session","version":1,"id":"x","createdAt":1,"cwd":"/w","delegationDepth":0})", "", 1,
        "unsupported session format version 1");
  check(R"({"type":"session","version":0,"id":"x","createdAt":1,"cwd":"/w"})", "", 1, "invalid session header");
  check(h, R"({"type":"request/header-delta","seq":0,"time":1,"data":{}})", 2,
        "legacy request/header-delta event is not supported");
  check(h, R"({"type":"mode/set","seq":0,"time":1,"data":{}})", 2, "legacy mode/set event is not supported");
  check(h, R"({"type":"request/header","seq":0,"time":1,"data":{"header":{},"reason":"fallback"}})", 2,
        "legacy request/header reason \"fallback\" is not supported");
  // A header naming another id than its file name is not that session's log.
  check(R"({"type":"session","version":0,"id":"y","createdAt":1,"cwd":"/w","delegationDepth":0})", "", 1,
        "session header (id \"y\") does not match the log's location");
}

BOOST_AUTO_TEST_CASE(empty_log_is_corrupt) {
  TempDir dir;
  std::string path = dir.path() + "/root/_no-cwd/x.jsonl";
  write_file(path, R"({"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0})");  // no newline
  auto store = open_store(dir, std::nullopt);
  try {
    store->read_log("x");
    BOOST_FAIL("expected StoreCorrupt");
  } catch (const StoreCorrupt& e) {
    BOOST_TEST(e.reason() == "empty or header-less session log");
  }
}

BOOST_AUTO_TEST_CASE(escaped_lone_surrogates_read_as_replacement_characters) {
  TempDir dir;
  std::string path = dir.path() + "/root/_no-cwd/x.jsonl";
  write_file(path, std::string(R"({"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0})") + "\n" +
                       R"({"type":"user/message","seq":0,"time":1,"data":{"content":[{"type":"text","text":"a\ud800b"}],"source":{"kind":"user"}},"surfaceOp":"append"})" +
                       "\n");
  auto store = open_store(dir, std::nullopt);
  auto log = store->read_log("x");
  BOOST_REQUIRE(log.events.size() == 1u);
  BOOST_TEST(std::string(log.events[0].at("data").at("content").at(0).at("text").as_string()) == "a\xEF\xBF\xBD" "b");
}

BOOST_AUTO_TEST_CASE(root_encoding_detection) {
  {
    TempDir dir;
    BOOST_TEST((open_store(dir, std::nullopt)->encoding() == Encoding::zstd));  // new roots default to zstd
  }
  {
    TempDir dir;
    two_turn_raw(dir);
    BOOST_TEST((open_store(dir, std::nullopt)->encoding() == Encoding::none));  // existing root keeps its encoding
    BOOST_CHECK_THROW(open_store(dir, Encoding::zstd), EncodingMismatch);
    BOOST_CHECK_NO_THROW(open_store(dir, Encoding::none));
  }
  {
    TempDir dir;
    two_turn_raw(dir);
    write_file(dir.path() + "/root/_no-cwd/other.jsonl.zstd", "x");
    BOOST_CHECK_THROW(open_store(dir, std::nullopt), EncodingMismatch);  // both encodings: incompatible artifact
  }
}

BOOST_AUTO_TEST_CASE(titles_and_surface) {
  TempDir dir;
  two_turn_raw(dir);
  auto store = open_store(dir, std::nullopt);
  auto title = store->read_title("s");
  BOOST_REQUIRE(title);
  BOOST_TEST(title->title == "first prompt here");
  BOOST_TEST(title->eventSeq == 2);
  BOOST_TEST(to_json_text(title->messageSeqs) == "[1]");
  {
    auto w = store->open("s");
    w.append({events::session_title("renamed", 1)}, true);
  }
  BOOST_TEST(store->read_title("s")->title == "renamed");  // the latest by log position wins
  auto surface = store->read_surface("s");
  BOOST_TEST(*surface.capturedThroughSeq == 17);  // the last raw seq (the title), not the last surface seq
  BOOST_REQUIRE(surface.events.size() == 4u);     // user, assistant, user, assistant
  BOOST_TEST(surface.events[0].at("type").as_string() == "user/message");
  BOOST_TEST(surface.events[3].at("seq").as_int64() == 14);
}

BOOST_AUTO_TEST_CASE(delete_removes_log_and_listing) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  auto store = open_store(dir, std::nullopt);
  BOOST_TEST(store->list_sessions().size() == 1u);
  store->delete_session("s");
  BOOST_TEST(!path_exists(path));
  BOOST_TEST(!store->exists("s"));
  BOOST_TEST(store->list_sessions().empty());
  BOOST_CHECK_THROW(store->delete_session("s"), SessionNotFound);
  BOOST_CHECK_THROW(store->open("s"), SessionNotFound);
  BOOST_CHECK_THROW(store->read_log("s"), SessionNotFound);
}

BOOST_AUTO_TEST_CASE(create_refuses_existing_ids) {
  TempDir dir;
  two_turn_raw(dir);
  auto store = open_store(dir, std::nullopt);
  BOOST_CHECK_THROW(store->create(make_header("s")), SessionExists);
  BOOST_CHECK_THROW(store->create(make_header("s", "/elsewhere")), SessionExists);  // any bucket
  auto w = store->open_or_create(make_header("s"));
  BOOST_TEST(w.next_seq() == 17);
}

BOOST_AUTO_TEST_CASE(streaming_reader_delivers_events_in_order) {
  TempDir dir;
  two_turn_raw(dir);
  auto store = open_store(dir, std::nullopt);
  std::int64_t expect = 0;
  auto r = store->read_events("s", [&](json::object&& e) { BOOST_TEST(e.at("seq").as_int64() == expect++); });
  BOOST_TEST(expect == 17);
  BOOST_TEST(*r.capturedThroughSeq == 16);
  BOOST_TEST(r.header.id == "s");
}

BOOST_AUTO_TEST_CASE(failed_append_rolls_back) {
  TempDir dir;
  std::string path = two_turn_raw(dir);
  const std::string before = read_file(path);
  // A real write failure: a child process with a file-size limit just above the current size.
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 1;
    try {
      auto store = open_store(dir, std::nullopt);
      auto w = store->open("s");
      ::signal(SIGXFSZ, SIG_IGN);
      struct rlimit lim {};
      lim.rlim_cur = lim.rlim_max = before.size() + 10;
      ::setrlimit(RLIMIT_FSIZE, &lim);
      try {
        w.append({events::turn_start(3), events::user_message(std::string(200, 'x'))});
        code = 2;  // the append should have failed
      } catch (const StoreError&) {
        code = 0;
      }
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(read_file(path) == before);  // no half batch left behind
}

// The chunk buffer is sized by the file's size when opened; bytes appended while it is read, and
// a file shorter than believed, must still come out exactly.
BOOST_AUTO_TEST_CASE(read_buffer_follows_the_file_not_its_expected_size) {
  TempDir dir;
  const std::string path = dir / "bytes";
  std::string bytes;
  for (int i = 0; bytes.size() < 3'500'000; ++i) bytes += std::to_string(i) + ',';
  write_file(path, bytes);
  UniqueFd fd = open_nofollow(path, O_RDONLY);
  BOOST_REQUIRE(fd);
  for (std::uint64_t expected : {std::uint64_t(0), std::uint64_t(1000), std::uint64_t(bytes.size()),
                                 std::uint64_t(bytes.size() * 2)}) {
    ReadBuffer buffer;
    std::string got;
    for (;;) {
      std::string_view chunk = buffer.read(fd.get(), got.size(), 1 << 20, expected, path);
      if (chunk.empty()) break;
      BOOST_TEST(chunk.size() <= std::size_t(1 << 20));
      got.append(chunk);
    }
    BOOST_TEST(got.size() == bytes.size());
    BOOST_TEST((got == bytes));
  }
}

BOOST_AUTO_TEST_CASE(raw_lines_appended_during_the_read_are_delivered) {
  TempDir dir;
  const std::string path = dir / "log.jsonl";
  write_file(path, "line 1\nline 2\n");
  UniqueFd fd = open_nofollow(path, O_RDONLY);
  BOOST_REQUIRE(fd);
  std::vector<std::string> lines;
  SourceTail tail = read_log_lines(fd.get(), path, Encoding::none, [&](const PlainLine& l) {
    lines.emplace_back(l.text);
    if (l.number == 1) append_file(path, std::string(2'000'000, 'x') + "\nline 4\n");
  });
  BOOST_TEST_REQUIRE(lines.size() == 4u);
  BOOST_TEST(lines[1] == "line 2");
  BOOST_TEST(lines[2].size() == 2'000'000u);
  BOOST_TEST(lines[3] == "line 4");
  BOOST_TEST(tail.file_size == 14u + 2'000'008u);
  BOOST_TEST(!tail.torn);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(packed_rows)

namespace {

std::string header_line() { return R"({"type":"session","version":0,"id":"p","createdAt":1,"delegationDepth":0})"; }

// Writes a log of the given event lines and reads it.
std::vector<json::object> read_lines(const TempDir& dir, const std::vector<std::string>& lines) {
  std::string text = header_line() + "\n";
  for (auto& l : lines) text += l + "\n";
  write_file(dir.path() + "/root/_no-cwd/p.jsonl", text);
  return open_store(dir, std::nullopt)->read_log("p").events;
}

} // namespace

BOOST_AUTO_TEST_CASE(valid_rows_expand) {
  TempDir dir;
  auto ev = read_lines(dir, {
      R"({"type":"turn/start","seq":0,"time":100,"data":{"turn":1}})",
      R"({"type":"text-chunks","seq0":1,"time0":200,"data":{"turn":1,"step":1,"index":0,"dt":[5,7],"texts":["a","b","c"]}})",
      R"({"type":"tool-call-chunks","seq0":4,"time0":300,"data":{"turn":1,"step":1,"index":1,"id":"c1","name":"bash","dt":[1],"args":["{","}"]}})",
      R"({"type":"reasoning-chunks","seq0":6,"time0":400,"data":{"turn":1,"step":1,"index":2,"dt":[],"texts":["r"]}})",
  });
  BOOST_REQUIRE(ev.size() == 7u);
  BOOST_TEST(to_json_text(ev[1]) ==
             R"({"type":"assistant/chunk","seq":1,"time":200,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}})");
  BOOST_TEST(ev[2].at("time").as_int64() == 205);
  BOOST_TEST(ev[3].at("time").as_int64() == 212);
  BOOST_TEST(to_json_text(ev[5]) ==
             R"({"type":"assistant/chunk","seq":5,"time":301,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c1","name":"bash","argumentsDelta":"}"}}})");
  BOOST_TEST(ev[6].at("data").at("chunk").at("type").as_string() == "reasoning-delta");
}

BOOST_AUTO_TEST_CASE(packed_fixture_expands_to_the_documented_count) {
  TempDir dir;
  std::string id = install_fixture(dir, "packed-chunks");
  auto store = open_store(dir, std::nullopt);
  auto log = store->read_log(id);
  BOOST_TEST(log.events.size() == 120u);
  for (std::size_t i = 0; i < log.events.size(); ++i) BOOST_TEST(log.events[i].at("seq").as_int64() == std::int64_t(i));
}

BOOST_AUTO_TEST_CASE(malformed_rows_are_unparsable_lines) {
  const std::string end = R"({"type":"turn/end","seq":4,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}})";
  const std::vector<std::string> bad_rows = {
      R"({"type":"text-chunks","seq0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}})",   // dt length
      R"({"type":"text-chunks","seq0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}})",               // empty
      R"({"type":"text-chunks","seq0":1,"time0":2,"extra":1,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}})",
      R"({"type":"text-chunks","seq0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a",2,"c"]}})",
      R"({"type":"text-chunks","seq0":-1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}})",
      R"({"type":"text-chunks","seq0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1.5,1],"texts":["a","b","c"]}})",
      R"({"type":"tool-call-chunks","seq0":1,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"args":["a","b","c"]}})",  // no id
      R"({"type":"text-chunks","seq0":2,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}})",  // seq gap
  };
  for (const auto& row : bad_rows) {
    TempDir dir;
    try {
      read_lines(dir, {R"({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}})", row, end});
      BOOST_FAIL("expected StoreCorrupt for " + row);
    } catch (const StoreCorrupt& e) {
      BOOST_TEST(e.line() == 3);
    }
    // The same row after the last turn/end just ends the committed prefix.
    TempDir dir2;
    auto ev = read_lines(dir2, {R"({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}})", row});
    BOOST_TEST(ev.size() == 1u);
  }
}

// A transient scan presents a row's members one at a time in one rewritten event: whatever the sink
// does with it (reads it, moves it away, moves a part of it away), it sees what a scan that keeps
// every event sees, in order, and the log's state is the same.
BOOST_AUTO_TEST_CASE(transient_scan_gives_the_events_a_kept_scan_gives) {
  TempDir dir;
  const std::vector<std::string> lines = {
      R"({"type":"turn/start","seq":0,"time":100,"data":{"turn":1}})",
      R"({"type":"text-chunks","seq0":1,"time0":200,"data":{"turn":1,"step":1,"index":0,"dt":[5,7,0],"texts":["a","\u001b[1mb","","d"]}})",
      R"({"type":"tool-call-chunks","seq0":5,"time0":300,"data":{"turn":1,"step":1,"index":1,"id":"c1","dt":[1,1],"args":["{","\"x\"","}"]}})",
      R"({"type":"assistant/chunk","seq":8,"time":301,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"e"}}})",
      R"({"type":"reasoning-chunks","seq0":9,"time0":400,"data":{"turn":1,"step":1,"index":2,"dt":[],"texts":["r"]}})",
      R"({"type":"text-chunks","seq0":10,"time0":500,"data":{"turn":1,"step":2,"index":0,"dt":[1],"texts":["f","g"]}})",
      R"({"type":"turn/end","seq":12,"time":600,"data":{"turn":1,"reason":{"kind":"completed"}}})",
  };
  auto kept = read_lines(dir, lines);
  BOOST_REQUIRE(kept.size() == 13u);
  auto store = open_store(dir, std::nullopt);
  enum class Take { nothing, event, data, chunk, alternate };
  for (Take take : {Take::nothing, Take::event, Take::data, Take::chunk, Take::alternate}) {
    std::vector<std::string> seen;
    std::vector<json::object> taken;
    auto result = store->read_events(
        "p",
        [&](json::object&& e) {
          seen.push_back(to_json_text(e));
          Take t = take == Take::alternate ? (seen.size() % 3 == 0 ? Take::event : Take::nothing) : take;
          if (t == Take::event) taken.push_back(std::move(e));
          if (t == Take::data) taken.push_back(std::move(e["data"].as_object()));
          if (t == Take::chunk) {
            if (auto* d = e["data"].if_object(); d && d->contains("chunk")) taken.push_back(std::move((*d)["chunk"].as_object()));
          }
        },
        {}, EventLifetime::transient);
    BOOST_TEST_CONTEXT("take " << int(take)) {
      BOOST_REQUIRE(seen.size() == kept.size());
      for (std::size_t i = 0; i < kept.size(); ++i) BOOST_TEST(seen[i] == to_json_text(kept[i]));
      BOOST_TEST(result.capturedThroughSeq.value_or(-1) == 12);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
