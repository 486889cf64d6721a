// Chunk lines written without event trees (store/chunk_lines.hpp) are the bytes of the records
// they stand for: every delta line against json::serialize of its event_record, over escapes,
// controls, Unicode, invalid bytes and extreme numbers; and a chunk batch through the writer
// against append() of the same events, in both generations and both encodings.
#include "support.hpp"

#include "support/json_text.hpp"
#include "store/chunk_lines.hpp"
#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace acp::store;
using namespace store_test;
namespace json = boost::json;
using acp::support::to_json_text;

namespace {

// What SessionWriter::append writes for the same delta.
std::string record_line(std::int64_t seq, std::int64_t time, std::int64_t turn, std::int64_t step, bool reasoning,
                        std::int64_t index, std::string_view text) {
  NewEvent e = reasoning ? events::reasoning_delta(turn, step, index, text) : events::text_delta(turn, step, index, text);
  return to_json_text(event_record(e.type, seq, time, std::move(e.data), e.surfaceOp, e.sourceEventSeqs));
}

std::string delta_line(std::int64_t seq, std::int64_t time, std::int64_t turn, std::int64_t step, bool reasoning,
                       std::int64_t index, std::string_view text) {
  std::string out;
  append_delta_line(out, seq, time, turn, step, reasoning ? "reasoning-delta" : "text-delta", index, text);
  return out;
}

std::vector<std::string> tricky_texts() {
  std::vector<std::string> t = {"", "a", "Hello there", " ", "\"", "\\", "\\\"", "\"\"\\\\", "/", "</script>",
                                "tab\there", "line\nbreak", "\r\n", "\b\f", "nul\0inside", "\x7f", "\x1f\x01\x1b[0m",
                                "caf\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "\xf0\x9f\x98\x80 emoji",
                                "\xe2\x80\xa8\xe2\x80\xa9", "\xef\xbb\xbf", "\xc3", "\xff\xfe bytes", "\xed\xa0\x80"};
  t[14] = std::string("nul\0inside", 10);
  std::string every;  // each byte value once
  for (int c = 0; c < 256; ++c) every += static_cast<char>(c);
  t.push_back(every);
  for (int c = 0; c < 0x20; ++c) t.push_back(std::string(1, static_cast<char>(c)) + "x" + static_cast<char>(c));
  t.push_back(std::string(100000, 'x') + "\n" + std::string(70000, '"'));
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(chunk_lines)

BOOST_AUTO_TEST_CASE(delta_lines_are_the_serialised_records) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max(), small = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::int64_t> numbers = {0, 1, 9, 10, 99, 1783600629541, kMaxSafeInteger, kMaxSafeInteger + 1, -1,
                                             -kMaxSafeInteger, big, small};
  int checked = 0;
  for (const std::string& text : tricky_texts()) {
    for (bool reasoning : {false, true}) {
      BOOST_TEST(delta_line(7, 1783600629541, 1, 1, reasoning, 0, text) ==
                 record_line(7, 1783600629541, 1, 1, reasoning, 0, text));
      ++checked;
    }
  }
  for (std::int64_t a : numbers)
    for (std::int64_t b : numbers) {
      BOOST_TEST(delta_line(a, b, a, b, false, a, "x") == record_line(a, b, a, b, false, a, "x"));
      BOOST_TEST(delta_line(b, a, b, a, true, b, "\"") == record_line(b, a, b, a, true, b, "\""));
      checked += 2;
    }
  BOOST_TEST(checked == 2 * 59 + 2 * 144);
}

// Random texts over an alphabet weighted towards what needs escaping, multi-byte sequences and
// their fragments (the serializer copies bytes it does not escape, valid UTF-8 or not).
BOOST_AUTO_TEST_CASE(random_delta_lines_are_the_serialised_records) {
  const std::vector<std::string> pieces = {"a", "Z", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f", "/",
                                           "\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xc3", "\x80", "\xff"};
  std::mt19937_64 rng(31);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1), length(0, 40);
  std::uniform_int_distribution<std::int64_t> number(std::numeric_limits<std::int64_t>::min(),
                                                     std::numeric_limits<std::int64_t>::max());
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (std::size_t n = length(rng); n > 0; --n) text += pieces[piece(rng)];
    const std::int64_t seq = number(rng), time = number(rng), index = number(rng);
    const bool reasoning = i % 2 == 1;
    BOOST_TEST_REQUIRE(delta_line(seq, time, i, i + 1, reasoning, index, text) ==
                       record_line(seq, time, i, i + 1, reasoning, index, text));
  }
}

BOOST_AUTO_TEST_CASE(a_batch_numbers_its_lines_and_takes_plain_chunks_only) {
  ChunkLines lines(40);
  lines.add_delta(2, 1, "text-delta", 0, "Hi");
  NewEvent end{"assistant/chunk", json::object{{"turn", 2}, {"step", 1}, {"chunk", json::object{{"type", "block-end"}}}},
               std::nullopt, std::nullopt, 123};
  lines.add_event(end);
  BOOST_TEST(lines.count() == 2);
  BOOST_TEST(lines.last_time() == 123);
  const auto got = split_lines(lines.text());
  BOOST_REQUIRE(got.size() == 2u);
  BOOST_TEST(got[0].rfind(R"({"type":"assistant/chunk","seq":40,"time":)", 0) == 0u);
  BOOST_TEST(got[1] == to_json_text(event_record(end.type, 41, 123, end.data, std::nullopt, std::nullopt)));
  // Anything that would change the log's state beyond its count and time is refused.
  BOOST_CHECK_THROW(lines.add_event(events::step_end(2, 1)), InvalidBatch);
  NewEvent marked = end;
  marked.ignorable = true;
  BOOST_CHECK_THROW(lines.add_event(marked), InvalidBatch);
  BOOST_TEST(lines.count() == 2);
}

// The same turn written with its chunks through append() and through append_chunk_lines() gives
// the same log, line for line once each line's own time is taken into its record, in every layout
// and encoding; the writer's state afterwards is the same too.
BOOST_AUTO_TEST_CASE(chunk_lines_through_the_writer_match_append) {
  for (Generation gen : {Generation::flat, Generation::project_dirs}) {
    for (Encoding enc : {Encoding::none, Encoding::zstd}) {
      TempDir dir;
      auto store = open_store(dir, enc, gen);
      auto w = store->create(make_header("s1"));
      write_turn(w, "first prompt", 5000);
      const std::int64_t first = w.next_seq();
      ChunkLines lines = w.chunk_lines();
      const std::vector<std::string> texts = {"one", "tw\"o", "\n", "caf\xc3\xa9"};
      for (std::size_t k = 0; k < texts.size(); ++k)
        lines.add_delta(2, 1, k % 2 ? "reasoning-delta" : "text-delta", std::int64_t(k), texts[k]);
      w.append_chunk_lines(lines, true);
      BOOST_TEST(w.next_seq() == first + 4);
      BOOST_TEST(w.last_time() == lines.last_time());
      // A batch that does not continue the log is refused.
      BOOST_CHECK_THROW(w.append_chunk_lines(lines), InvalidBatch);
      write_turn(w, "second prompt", 7000);  // the writer goes on from the batch's seqs
      const std::string path = w.path();
      w.release();

      const std::string text = enc == Encoding::zstd ? zstd_plaintext(read_file(path)) : read_file(path);
      const auto got = split_lines(text);
      BOOST_REQUIRE(got.size() > std::size_t(first + 4));
      for (std::size_t k = 0; k < texts.size(); ++k) {
        const std::string& line = got[std::size_t(first) + 1 + k];  // + the header line
        const std::int64_t time = json::parse(line).at("time").as_int64();
        BOOST_TEST(line == record_line(first + std::int64_t(k), time, 2, 1, k % 2 == 1, std::int64_t(k), texts[k]));
      }
      // The events read back as the store reads any log, and the next turn's seqs continue.
      auto log = store->read_log("s1");
      BOOST_TEST(log.events.size() == got.size() - 1);
      for (std::size_t i = 0; i < log.events.size(); ++i) BOOST_TEST(log.events[i].at("seq").as_int64() == std::int64_t(i));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
