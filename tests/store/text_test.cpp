// Log lines are JSON text (issue 27): the writers of both layouts and encodings refuse a line that
// is not valid UTF-8 before anything of its batch is written, and a log an older release wrote
// with raw bytes in a line (a command's output, a file name) is read with U+FFFD in their place,
// never as a corrupt session: load, continue, list, verify and copy all work.
#include "support.hpp"

#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/session_writer.hpp"
#include "store/zstd_frames.hpp"
#include "support/utf8.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::store;
using namespace store_test;
namespace json = boost::json;

namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

struct Layout {
  Generation generation;
  Encoding encoding;
};

const Layout kLayouts[] = {{Generation::flat, Encoding::none},
                           {Generation::flat, Encoding::zstd},
                           {Generation::project_dirs, Encoding::none},
                           {Generation::project_dirs, Encoding::zstd}};

std::string describe(const Layout& l) {
  return std::string(generation_name(l.generation)) + (l.encoding == Encoding::zstd ? " zstd" : " raw");
}

std::unique_ptr<SessionStore> root_at(const std::string& root, const Layout& l) {
  StoreOptions o;
  o.root = root;
  o.encoding = l.encoding;
  o.generation = l.generation;
  return std::make_unique<SessionStore>(o);
}

std::string plaintext(const std::string& path) {
  std::string bytes = read_file(path);
  return path.ends_with(".zstd") ? zstd_plaintext(bytes) : bytes;
}

// Writes `text` as the log at `path`, in the file's encoding: a zstd log's header is a frame of
// its own (the layout's rule), the rest one more frame.
void rewrite_log(const std::string& path, const std::string& text) {
  if (!path.ends_with(".zstd")) return write_file(path, text);
  const std::size_t header_end = text.find('\n') + 1;
  write_file(path, compress_frame(text.substr(0, header_end)) + compress_frame(text.substr(header_end)));
}

// What the release before this rule wrote for a command that printed 'A\xFFB': the raw byte
// inside the JSON string.
std::string corrupt_a_line(const std::string& path) {
  std::string text = plaintext(path);
  const std::string marker = "MARKER";
  for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at))
    text.replace(at, marker.size(), "A\xFF" "B");
  BOOST_REQUIRE(!acp::support::valid_utf8(text));
  rewrite_log(path, text);
  return text;
}

// The 1-based numbers of the lines holding bytes that are not UTF-8.
std::vector<std::int64_t> bad_lines(const std::string& text) {
  std::vector<std::int64_t> out;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!acp::support::valid_utf8(lines[i])) out.push_back(std::int64_t(i + 1));
  return out;
}

std::string user_text(const json::object& e) {
  const json::value* content = e.at("data").as_object().if_contains("content");
  return content ? std::string(content->as_array().at(0).at("text").as_string()) : std::string();
}

} // namespace

BOOST_AUTO_TEST_SUITE(log_text)

BOOST_AUTO_TEST_CASE(writers_refuse_a_line_that_is_not_utf8_and_write_nothing) {
  for (const Layout& layout : kLayouts) {
    BOOST_TEST_CONTEXT(describe(layout)) {
      TempDir dir;
      auto store = root_at(dir / "root", layout);
      // A new session whose first batch holds a bad string: no file appears.
      {
        SessionWriter w = store->create(make_header("new"));
        BOOST_CHECK_THROW(w.append({events::turn_start(1), events::user_message("A\xFF" "B")}, true), InvalidLogText);
        BOOST_TEST(!w.on_disk());
      }
      BOOST_TEST(!store->exists("new"));
      // A header that is not text (its cwd) is refused the same way.
      {
        SessionWriter w = store->create(make_header("cwd", "/work/caf\xE9"));
        BOOST_CHECK_THROW(w.append({events::turn_start(1), events::user_message("ok")}, true), InvalidLogText);
      }
      BOOST_TEST(!store->exists("cwd"));
      // An existing log: the batch is refused whole, the file keeps its bytes, and the writer goes on.
      SessionWriter w = store->create(make_header("s"));
      write_turn(w, "first prompt", 5000);
      const std::string before = read_file(w.path());
      const std::int64_t next = w.next_seq();
      json::array content{json::object{{"type", "text"}, {"text", "n\xE4me.txt"}}};
      try {
        w.append({events::turn_start(2), events::user_message("fine"),
                  events::tool_result(2, 1, "call-1", content, false, 1, std::nullopt, std::nullopt)});
        BOOST_FAIL("the batch was written");
      } catch (const InvalidLogText& e) {
        BOOST_TEST(std::string(e.what()).find("line 3 of the batch is not valid UTF-8") != std::string::npos, e.what());
      }
      BOOST_TEST(read_file(w.path()) == before);
      BOOST_TEST(w.next_seq() == next);
      write_turn(w, "second prompt", 6000);
      const std::int64_t total = w.next_seq();
      w.release();
      BOOST_TEST(total > next);
      BOOST_TEST(store->read_log("s").events.size() == std::size_t(total));
      // Lines copied in (`store copy`) are held to the same rule: a copy with one bad line creates nothing.
      std::string header;
      std::vector<std::string> lines;
      store->export_lines("s", [&](std::string_view h) { header = h; }, [&](std::string_view l) { lines.emplace_back(l); });
      BOOST_REQUIRE(lines.at(1).find("first prompt") != std::string::npos);
      lines[1].replace(lines[1].find("first prompt"), 5, "\xC0\xAF");
      auto copy = root_at(dir / "copy", layout);
      BOOST_CHECK_THROW(copy->import_lines("s", layout.generation, header, 0, lines), InvalidLogText);
      BOOST_TEST(!copy->exists("s"));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_line_an_older_release_wrote_raw_is_read_with_replacement_characters) {
  for (const Layout& layout : kLayouts) {
    BOOST_TEST_CONTEXT(describe(layout)) {
      TempDir dir;
      std::string path;
      std::int64_t count = 0;
      {
        auto store = root_at(dir / "root", layout);
        SessionWriter w = store->create(make_header("s"));
        write_turn(w, "printed MARKER here", 5000);
        write_turn(w, "a later turn", 6000);  // its turn/end made damage before it corruption
        path = w.path();
        count = w.next_seq();
      }
      const std::string damaged = corrupt_a_line(path);
      BOOST_TEST(bad_lines(damaged).size() == 2u);  // the user message and its title

      auto store = root_at(dir / "root", layout);
      LogSnapshot log = store->read_log("s");
      BOOST_TEST(log.events.size() == std::size_t(count));
      BOOST_TEST(user_text(log.events.at(1)) == "printed A" + kReplacement + "B here");
      // Listing reads its title as text too.
      auto listed = store->list_sessions();
      BOOST_REQUIRE(listed.size() == 1u);
      BOOST_TEST(listed[0].title.value_or("").find("A" + kReplacement + "B") != std::string::npos);
      // A writer continues the session; the old line stays as it was (a log is never rewritten).
      {
        SessionWriter w = store->open("s");
        write_turn(w, "continued", 7000);
      }
      BOOST_TEST(store->read_log("s").events.size() > std::size_t(count));
      BOOST_TEST(plaintext(path).starts_with(damaged));
      // `store verify` names each such line.
      std::vector<std::pair<std::int64_t, std::string>> problems;
      store->check_log_file(path, [&](std::int64_t line, const std::string& why) { problems.emplace_back(line, why); });
      BOOST_REQUIRE(problems.size() == 2u);
      BOOST_TEST(problems[0].first == bad_lines(damaged)[0]);
      BOOST_TEST(problems[0].second.find("not valid UTF-8") != std::string::npos, problems[0].second);
      // `store copy` hands the line out as it is read, and another root takes it.
      std::string header;
      std::vector<std::string> lines;
      store->export_lines("s", [&](std::string_view h) { header = h; }, [&](std::string_view l) { lines.emplace_back(l); });
      for (const auto& l : lines) BOOST_TEST(acp::support::valid_utf8(l));
      auto copy = root_at(dir / "copy", layout);
      copy->import_lines("s", layout.generation, header, 0, lines);
      BOOST_TEST(user_text(copy->read_log("s").events.at(1)) == "printed A" + kReplacement + "B here");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
