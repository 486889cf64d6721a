// The harness 0.1 store generation (issue 15, docs/store-format.md#release-011-shapes): projectKey,
// layout detection, the normalised event model both ways, writing and repairing a 0.1 root, several
// roots as one.
#include "support.hpp"

#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/event_model.hpp"
#include "store/fold.hpp"
#include "store/layout.hpp"
#include "store/records.hpp"
#include "store/store_set.hpp"
#include "store/zstd_frames.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

using namespace acp::store;
using namespace store_test;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

std::string line_of(const json::object& o) { return json::serialize(o); }

std::unique_ptr<SessionStore> open_root(const std::string& root, std::optional<Generation> gen,
                                        std::optional<Encoding> enc = std::nullopt, bool read_only = false) {
  StoreOptions o;
  o.root = root;
  o.encoding = enc;
  o.generation = gen;
  o.read_only = read_only;
  return std::make_unique<SessionStore>(o);
}

// Plaintext lines of a log of either encoding.
std::vector<std::string> log_lines(const std::string& path) {
  std::string bytes = read_file(path);
  if (path.size() > 5 && path.substr(path.size() - 5) == ".zstd") bytes = zstd_plaintext(bytes);
  return split_lines(bytes);
}

// One line of 0.1.1 text per event type whose shape differs from 45fc, and its normalised form.
struct ShapePair {
  const char* v01;
  const char* normalised;
};

const ShapePair kShapes[] = {
    {R"({"type":"assistant/message","seq":5,"time":9,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"},"id":"m-a"},"usage":{"inputTokens":3,"outputTokens":4}},"sourceEventSeqs":[3,4],"surfaceOp":"append"})",
     R"({"type":"assistant/message","seq":5,"time":9,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"hi"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}],"provenance":{"provider":"deepseek","model":"deepseek-chat"},"usage":{"inputTokens":3,"outputTokens":4},"id":"m-a"},"sourceEventSeqs":[3,4],"surfaceOp":"append"})"},
    {R"({"type":"tool/result","seq":7,"time":9,"data":{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"file"}],"isError":false}],"role":"user","id":"m-t"},"error":{"name":"E","code":"X"}},"sourceEventSeqs":[6],"surfaceOp":"append"})",
     R"({"type":"tool/result","seq":7,"time":9,"data":{"turn":1,"step":1,"callId":"c1","content":[{"type":"text","text":"file"}],"isError":false,"error":{"name":"E","code":"X"},"id":"m-t"},"sourceEventSeqs":[6],"surfaceOp":"append"})"},
    {R"({"type":"turn/end","seq":9,"time":9,"data":{"turn":1,"reason":{"kind":"error","error":{"message":"boom","code":"PROVIDER_HTTP"}}}})",
     R"({"type":"turn/end","seq":9,"time":9,"data":{"turn":1,"reason":{"kind":"error","failure":{"message":"boom","code":"PROVIDER_HTTP"}}}})"},
    {R"({"type":"compaction/start","seq":10,"time":9,"data":{"compactionId":"k","turn":null}})",
     R"({"type":"compact/start","seq":10,"time":9,"data":{"compactionId":"k","turn":null}})"},
    {R"({"type":"compaction/end","seq":13,"time":9,"data":{"compactionId":"k","turn":null}})",
     R"({"type":"compact/end","seq":13,"time":9,"data":{"compactionId":"k","turn":null}})"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(v01_layout)

// The table of docs/store-format.md#projectkey and more (computed with a port of the harness's projectKey).
BOOST_AUTO_TEST_CASE(project_dirs_of_the_spec_table) {
  BOOST_TEST(project_dir_name(std::string("/home/alice/proj")) == "--home-alice-proj--");
  BOOST_TEST(project_dir_name(std::string("/")) == "--root--");
  BOOST_TEST(project_dir_name(std::string("///")) == "--root--");
  BOOST_TEST(project_dir_name(std::string("/home/alice/my project")) == "--home-alice-my~0020project--");
  BOOST_TEST(project_dir_name(std::string("C:\\Users\\Bob\\repo")) == "--C-Users-Bob-repo--");
  BOOST_TEST(project_dir_name(std::string("C:/Users/Bob/repo")) == "--C-Users-Bob-repo--");
  BOOST_TEST(project_dir_name(std::string("\\\\server\\share\\dir")) == "--server-share-dir--");
  BOOST_TEST(project_dir_name(std::string("/home/zo\xC3\xAB/\xE9\xA1\xB9\xE7\x9B\xAE")) ==
             "--home-zo~00EB-~9879~76EE--");
  BOOST_TEST(project_dir_name(std::string("/srv/\xF0\x9F\x98\x80")) == "--srv-~D83D~DE00--");
  BOOST_TEST(project_dir_name(std::string("/home/a~b/x:y")) == "--home-a~007Eb-x-y--");
  BOOST_TEST(project_dir_name(std::string("/tmp//a/./b/")) == "--tmp-a-.-b---");
  BOOST_TEST(project_dir_name(std::string("/-lead/--x")) == "--lead---x--");
  BOOST_TEST(project_dir_name(std::string("/x/") + std::string(300, 'a')) == "--x-" + std::string(249, 'a') + "--");
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "\xC3\xA9";
  std::string cut = "--x-";
  for (int i = 0; i < 49; ++i) cut += "~00E9";
  BOOST_TEST(project_dir_name("/x/" + e100) == cut + "~00E--");
  BOOST_TEST(project_dir_name(std::nullopt) == "_no-cwd");
  BOOST_CHECK_THROW(project_key(""), InvalidSessionId);
}

BOOST_AUTO_TEST_CASE(log_entries_per_generation) {
  BOOST_TEST(log_entry_name(Generation::flat, "a/b", Encoding::zstd) == "a~002Fb.jsonl.zstd");
  BOOST_TEST(log_entry_name(Generation::project_dirs, "a/b", Encoding::zstd) == "a~002Fb/session.jsonl.zstd");
  BOOST_TEST(log_entry_name(Generation::project_dirs, "s1", Encoding::none) == "s1/session.jsonl");
  BOOST_CHECK_THROW(log_entry_name(Generation::project_dirs, std::string(256, 'x'), Encoding::none), IdTooLong);
  BOOST_TEST((*parse_generation("0.1") == Generation::project_dirs));
  BOOST_TEST((*parse_generation("45fc") == Generation::flat));
  BOOST_TEST(!parse_generation("0.2"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(event_model)

BOOST_AUTO_TEST_CASE(v01_shapes_normalise_and_write_back) {
  for (const auto& pair : kShapes) {
    json::object e = obj(pair.v01);
    BOOST_TEST(!normalise_event(e));
    BOOST_TEST(json::value(e) == json::parse(pair.normalised), pair.v01);
    // A normalised record written into a 0.1 root is the 0.1.1 line again, byte for byte.
    auto back = to_v01_record(obj(pair.normalised));
    BOOST_REQUIRE(back);
    BOOST_TEST(line_of(*back) == pair.v01);
    // Normalising a normalised event changes nothing (45fc lines cost nothing).
    json::object again = obj(pair.normalised);
    normalise_event(again);
    BOOST_TEST(line_of(again) == line_of(obj(pair.normalised)));
  }
}

BOOST_AUTO_TEST_CASE(v45fc_shapes_are_written_as_01_writes_them) {
  auto v01 = [](std::string_view text) { return line_of(*to_v01_record(obj(text))); };
  BOOST_TEST(v01(R"({"type":"turn/start","seq":1,"time":2,"data":{"turn":1,"trigger":{"kind":"message"}}})") ==
             R"({"type":"turn/start","seq":1,"time":2,"data":{"turn":1}})");
  BOOST_TEST(v01(R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"aborted"}}})") ==
             R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}})");
  BOOST_TEST(
      v01(R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"error","step":1,"message":"m"}}})") ==
      R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"error","error":{"message":"m","code":"UNKNOWN"}}}})");
  BOOST_TEST(
      v01(R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"error","step":1,"failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}}})") ==
      R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"error","error":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}}})");
  BOOST_TEST(v01(R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"max-tokens"}}})") ==
             R"({"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"max-tokens"}}})");
  // The direct message: {content, source, role, id}; the reference snapshot is a recall.
  BOOST_TEST(
      v01(R"({"type":"user/message","seq":1,"time":2,"data":{"content":[],"source":{"kind":"user"},"id":"u"},"surfaceOp":"append"})") ==
      R"({"type":"user/message","seq":1,"time":2,"data":{"content":[],"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append"})");
  BOOST_TEST(
      v01(R"({"type":"user/message","seq":1,"time":2,"data":{"content":[],"source":{"kind":"session-reference","version":1,"references":[]},"id":"r"},"surfaceOp":"append"})") ==
      R"({"type":"user/message","seq":1,"time":2,"data":{"source":{"kind":"session-reference","form":"recall","version":1,"references":[]},"content":[],"role":"user","id":"r"},"surfaceOp":"append"})");
  BOOST_TEST(v01(R"({"type":"compact/summary","seq":1,"time":2,"data":{"summary":[],"shadowedRange":{"start":1,"end":2},"shadowedSeqs":[1,2],"shadowedTokenCount":3,"provider":"p","model":"m","compactionId":"k"}})") ==
             R"({"type":"compaction/summary","seq":1,"time":2,"data":{"compactionId":"k","summary":[],"shadowedRange":{"start":1,"end":2},"shadowedSeqs":[1,2],"shadowedTokenCount":3,"provider":"p","model":"m"}})");
  // Types whose shape is the same are written as they are.
  BOOST_TEST(!to_v01_record(obj(R"({"type":"assistant/chunk","seq":1,"time":2,"data":{}})")));
  BOOST_TEST(!to_v01_record(obj(R"({"type":"session/title","seq":1,"time":2,"data":{}})")));
}

BOOST_AUTO_TEST_CASE(unknown_types_are_flagged_unless_ignorable) {
  json::object known = obj(R"({"type":"agent/inbox/spliced","seq":1,"time":2,"data":{}})");
  BOOST_TEST(!normalise_event(known));
  json::object unknown = obj(R"({"type":"future/thing","seq":1,"time":2,"data":{}})");
  BOOST_TEST(normalise_event(unknown));
  json::object ignorable = obj(R"({"type":"future/thing","seq":1,"time":2,"data":{},"ignorable":true})");
  BOOST_TEST(!normalise_event(ignorable));
  // Our own type, as releases before wrote it into 45fc roots (unmarked): known, not flagged.
  json::object own = obj(R"({"type":"dsh-acp/permission-rule","seq":1,"time":2,"data":{"tool":"edit","decision":"allow"}})");
  BOOST_TEST(!normalise_event(own));
}

BOOST_AUTO_TEST_CASE(ids_are_minted_once_per_message_and_compaction) {
  std::string compaction;
  json::object start = obj(R"({"type":"compact/start","seq":1,"time":2,"data":{"turn":1}})");
  assign_v01_ids(start, compaction);
  const std::string id(start.at("data").at("compactionId").as_string());
  BOOST_TEST(id.size() == 36u);
  BOOST_TEST(id[14] == '4');  // a v4 UUID
  json::object checkpoint =
      obj(R"({"type":"user/message","seq":2,"time":2,"data":{"content":[],"source":{"kind":"plugin","plugin":"compact"}}})");
  assign_v01_ids(checkpoint, compaction);
  BOOST_TEST(checkpoint.at("data").at("source").at("compactionId").as_string() == id);
  BOOST_TEST(checkpoint.at("data").at("id").as_string().size() == 36u);
  json::object end = obj(R"({"type":"compact/end","seq":3,"time":2,"data":{"turn":1}})");
  assign_v01_ids(end, compaction);
  BOOST_TEST(end.at("data").at("compactionId").as_string() == id);
  BOOST_TEST(compaction.empty());
}

// A prune (docs/store-format.md#release-011-shapes) replaces a tool result with only its content changed: the
// normalised fold accepts it, and refuses one that changed anything else.
BOOST_AUTO_TEST_CASE(pruned_tool_results_fold) {
  auto result = [](int seq, const char* text, const char* id, std::optional<int> replaces) {
    std::string line = R"({"type":"tool/result","seq":)" + std::to_string(seq) +
                       R"(,"time":1,"data":{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c"},"content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":")" +
                       text + R"("}],"isError":false}],"role":"user","id":")" + id + R"("}},)";
    line += replaces ? R"("sourceEventSeqs":[)" + std::to_string(*replaces) + R"(],"surfaceOp":{"op":"replace","start":)" +
                           std::to_string(*replaces) + R"(,"end":)" + std::to_string(*replaces) + "}}"
                     : std::string(R"("surfaceOp":"append"})");
    json::object e = obj(line);
    normalise_event(e);
    return e;
  };
  json::object prune = obj(R"({"type":"compaction/prune","seq":1,"time":1,"data":{"shadowedRange":{"start":0,"end":0},"shadowedSeqs":[0],"shadowedTokenCount":9}})");
  normalise_event(prune);
  std::vector<json::object> ok{result(0, "long output", "m1", std::nullopt), prune, result(2, "[pruned]", "m1", 0)};
  BOOST_TEST(fold_surface(ok) == std::vector<std::int64_t>{2});
  std::vector<json::object> bad{result(0, "long output", "m1", std::nullopt), prune, result(2, "[pruned]", "m2", 0)};
  BOOST_CHECK_THROW(fold_surface(bad), FoldError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(v01_store)

BOOST_AUTO_TEST_CASE(new_root_takes_the_requested_generation_and_writes_01_shapes) {
  for (Encoding enc : {Encoding::zstd, Encoding::none}) {
    TempDir dir;
    auto store = open_root(dir / "root", Generation::project_dirs, enc);
    BOOST_TEST((store->generation() == Generation::project_dirs));
    SessionHeader h = make_header("s/1", "/home/alice/proj");
    {
      SessionWriter w = store->create(h);
      write_turn(w, "hello there");
    }
    const std::string sdir = dir / "root/--home-alice-proj--/s~002F1";
    const std::string log = sdir + "/" + v01_log_name(enc);
    BOOST_REQUIRE(path_exists(log));
    BOOST_TEST(path_exists(sdir + "/dsh-acp.lock"));  // beside the log, where 0.1.1 reads nothing else
    BOOST_TEST(file_mode(sdir) == 0700u);
    BOOST_TEST(file_mode(log) == 0600u);
    std::vector<std::string> lines = log_lines(log);
    BOOST_TEST(lines[0] == R"({"type":"session","version":0,"id":"s/1","createdAt":1000,"cwd":"/home/alice/proj","delegationDepth":0})");
    json::object turn_start = obj(lines[1]);
    BOOST_TEST(line_of(turn_start.at("data").as_object()) == R"({"turn":1})");
    json::object user = obj(lines[2]);
    BOOST_TEST(user.at("data").at("role") == "user");
    BOOST_TEST(user.at("data").at("id").as_string().size() == 36u);
    bool envelope = false;
    for (const auto& l : lines)
      if (l.find(R"("type":"assistant/message")") != std::string::npos) {
        json::object a = obj(l);
        envelope = a.at("data").as_object().contains("message") && !a.at("data").as_object().contains("content");
        BOOST_TEST(a.at("data").at("message").at("source").at("kind") == "model");
      }
    BOOST_TEST(envelope);
    // Read back: the normalised model, the same a 45fc log gives.
    LogSnapshot snap = store->read_log("s/1");
    BOOST_TEST(snap.events.size() + 1 == lines.size());
    const json::object* assistant = nullptr;
    for (const auto& e : snap.events)
      if (string_at(e, "type") == "assistant/message") assistant = &e;
    BOOST_REQUIRE(assistant);
    BOOST_TEST(assistant->at("data").at("content").at(0).at("text") == "Hello there");
    BOOST_TEST(assistant->at("data").at("provenance").at("provider") == "echo");
    // Listed with its title, and a second store over the same root agrees on the generation.
    auto again = open_root(dir / "root", std::nullopt);
    BOOST_TEST((again->generation() == Generation::project_dirs));
    auto rows = again->list_sessions();
    BOOST_REQUIRE(rows.size() == 1u);
    BOOST_TEST(rows[0].header.id == "s/1");
    BOOST_TEST(rows[0].title.value_or("") == "hello there");
    // Delete takes the session directory with it.
    again->delete_session("s/1");
    BOOST_TEST(!path_exists(sdir));
    BOOST_TEST(again->list_sessions().empty());
  }
}

BOOST_AUTO_TEST_CASE(a_root_is_detected_from_what_it_holds) {
  TempDir dir;
  {
    auto flat = open_root(dir / "root", Generation::flat);
    SessionWriter w = flat->create(make_header("a"));
    write_turn(w, "x");
  }
  // Holds flat logs: 45fc, whatever a new root would default to.
  StoreOptions o;
  o.root = dir / "root";
  o.default_generation = Generation::project_dirs;
  BOOST_TEST((SessionStore(o).generation() == Generation::flat));
  // A requested generation is for new roots: this one keeps its own (one flag works beside both).
  o.generation = Generation::project_dirs;
  BOOST_CHECK_NO_THROW(SessionStore::check_root(o));
  BOOST_TEST((SessionStore(o).generation() == Generation::flat));

  // Both encodings in one root: the error names both files.
  TempDir mixed;
  write_file(mixed / "root/--p--/a/session.jsonl", R"({"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0})" "\n");
  write_file(mixed / "root/--p--/b/session.jsonl.zstd", compress_frame(R"({"type":"session","version":0,"id":"b","createdAt":1,"delegationDepth":0})" "\n"));
  StoreOptions m;
  m.root = mixed / "root";
  try {
    SessionStore::check_root(m);
    BOOST_FAIL("mixed encodings accepted");
  } catch (const EncodingMismatch& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("--p--/a/session.jsonl") != std::string::npos);
    BOOST_TEST(what.find("--p--/b/session.jsonl.zstd") != std::string::npos);
  }
  // The walk stops looking for an encoding once it has seen one: a single log of the other one
  // among many, in any directory order, and one session directory holding both, are still found.
  for (const char* odd : {"root/--q--/k/session.jsonl", "root/--p--/c3/session.jsonl"}) {
    TempDir many;
    for (int i = 0; i < 6; ++i)
      write_file(many / ("root/--p--/c" + std::to_string(i) + "/session.jsonl.zstd"),
                 compress_frame(R"({"type":"session","version":0,"id":"c)" + std::to_string(i) +
                                R"(","createdAt":1,"delegationDepth":0})" "\n"));
    write_file(many / odd, R"({"type":"session","version":0,"id":"k","createdAt":1,"delegationDepth":0})" "\n");
    StoreOptions mm;
    mm.root = many / "root";
    BOOST_CHECK_THROW(SessionStore::check_root(mm), EncodingMismatch);
  }
}

BOOST_AUTO_TEST_CASE(flat_logs_in_a_01_root_are_read_only_and_dirs_without_a_log_are_skipped) {
  TempDir dir;
  auto store = open_root(dir / "root", Generation::project_dirs, Encoding::none);
  {
    SessionWriter w = store->create(make_header("good", "/p"));
    write_turn(w, "one");
  }
  // Somebody else's mistake: a flat log in the project directory; and an empty session directory.
  write_file(dir / "root/--p--/stray.jsonl",
             R"({"type":"session","version":0,"id":"stray","createdAt":5,"cwd":"/p","delegationDepth":0})" "\n");
  ::mkdir((dir / "root/--p--/empty").c_str(), 0700);
  auto again = open_root(dir / "root", std::nullopt);
  BOOST_TEST((again->generation() == Generation::project_dirs));
  auto rows = again->list_sessions();
  BOOST_TEST(rows.size() == 2u);
  BOOST_TEST(again->read_log("stray").events.empty());
  BOOST_CHECK_THROW(again->open("stray"), SessionReadOnly);
  BOOST_CHECK_THROW(again->delete_session("stray"), SessionReadOnly);
  BOOST_TEST(path_exists(dir / "root/--p--/stray.jsonl"));
  // The 0.1 session next to it is writable as ever.
  SessionWriter w = again->open("good");
  write_turn(w, "two");
}

BOOST_AUTO_TEST_CASE(a_read_only_root_is_never_written) {
  TempDir dir;
  {
    auto store = open_root(dir / "root", Generation::project_dirs);
    SessionWriter w = store->create(make_header("s", "/p"));
    write_turn(w, "one");
  }
  const std::string before = read_file(dir / "root/--p--/s/session.jsonl.zstd");
  auto ro = open_root(dir / "root", std::nullopt, std::nullopt, true);
  BOOST_TEST(ro->list_sessions().size() == 1u);
  BOOST_CHECK_THROW(ro->open("s"), SessionReadOnly);
  BOOST_CHECK_THROW(ro->create(make_header("t", "/p")), SessionReadOnly);
  BOOST_TEST(read_file(dir / "root/--p--/s/session.jsonl.zstd") == before);
  // A read-only root that does not exist is not created.
  auto missing = open_root(dir / "nothing", std::nullopt, std::nullopt, true);
  BOOST_TEST(!path_exists(dir / "nothing"));
  BOOST_TEST(missing->list_sessions().empty());
}

BOOST_AUTO_TEST_CASE(repair_writes_the_closers_01_writes) {
  TempDir dir;
  auto store = open_root(dir / "root", Generation::project_dirs, Encoding::none);
  {
    SessionWriter w = store->create(make_header("s", "/p"));
    std::vector<NewEvent> open{events::turn_start(1), events::user_message("run it"), events::step_start(1, 1)};
    w.append(std::move(open));
    json::array content{json::object{{"type", "tool-call"}, {"id", "call-1"}, {"name", "bash"}, {"arguments", "{}"}}};
    w.append({events::assistant_message(1, 1, content, "p", "m")});
    NewEvent call{"tool/call", json::object{{"turn", 1}, {"step", 1}, {"callId", "call-1"}, {"name", "bash"}, {"arguments", "{}"}},
                  std::nullopt, std::nullopt, std::nullopt};
    w.append({std::move(call)}, true);
  }  // the writer dies with the turn open, as a killed process would leave it
  auto again = open_root(dir / "root", std::nullopt);
  { SessionWriter w = again->open("s"); }
  std::vector<std::string> lines = log_lines(dir / "root/--p--/s/session.jsonl");
  const std::size_t n = lines.size();
  BOOST_REQUIRE(n >= 4u);
  const std::string seq = std::to_string(n - 4);  // the closer's own seq (line n-3 holds seq n-4)
  BOOST_TEST(lines[n - 3] ==
             R"({"type":"tool/result","seq":)" + seq +
                 R"(,"time":)" + std::to_string(obj(lines[n - 4]).at("time").as_int64()) +
                 R"(,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-call-1-)" + seq +
                 R"(","role":"user","source":{"kind":"tool","callId":"call-1"},"content":[{"type":"tool-result","toolCallId":"call-1","isError":true,"content":[{"type":"text","text":")" +
                 kToolOutcomeUnknownText +
                 R"("}]}]},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[)" +
                 std::to_string(n - 5) + "]}");
  BOOST_TEST(obj(lines[n - 2]).at("type") == "step/end");
  BOOST_TEST(line_of(obj(lines[n - 1]).at("data").as_object()) == R"({"turn":1,"reason":{"kind":"interrupted"}})");
  // And the repaired log reads back normalised, the closer's result on the surface.
  LogSnapshot snap = again->read_log("s");
  BOOST_TEST(snap.events[n - 4].at("data").at("callId") == "call-1");
}

BOOST_AUTO_TEST_CASE(several_roots_list_and_serve_as_one) {
  TempDir dir;
  std::vector<std::unique_ptr<Backend>> roots;
  roots.push_back(open_root(dir / "ours", Generation::flat));
  roots.push_back(open_root(dir / "harness", Generation::project_dirs));
  {
    SessionWriter w = roots[1]->create(make_header("old", "/p", 100));
    write_turn(w, "from the harness");
  }
  StoreSet set(std::move(roots));
  {
    SessionWriter w = set.create(make_header("new", "/p", 200));
    write_turn(w, "ours");
  }
  BOOST_TEST(path_exists(dir / ("ours/" + bucket_name(std::string("/p")) + "/new.jsonl.zstd")));
  BOOST_CHECK_THROW(set.create(make_header("old", "/p", 300)), SessionExists);
  auto rows = set.list_sessions();
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].header.id == "new");
  BOOST_TEST(rows[1].header.id == "old");
  ListQuery page;
  page.limit = 1;
  page.after = std::make_pair(std::int64_t(200), std::string("new"));
  auto second = set.list_sessions(page);
  BOOST_REQUIRE(second.size() == 1u);
  BOOST_TEST(second[0].header.id == "old");
  // Continuing the harness's session writes into its own root, in its own shapes.
  {
    SessionWriter w = set.open_or_create(make_header("old", "/p", 100));
    write_turn(w, "continued");
  }
  BOOST_TEST(set.read_log("old").events.size() == 17u);  // 9 events of the first turn (title too), 8 of the second
  BOOST_TEST(set.holder("old") == set.roots()[1].get());
}

BOOST_AUTO_TEST_SUITE_END()
