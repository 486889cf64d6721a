// SseParser: framing must not depend on where reads happen to split the bytes.
#include "net/sse_parser.hpp"

#include <boost/test/unit_test.hpp>

using acp::net::SseItem;
using acp::net::SseItemKind;
using acp::net::SseParser;

namespace {

std::vector<SseItem> parse_pieces(const std::vector<std::string_view>& pieces) {
  SseParser p;
  std::vector<SseItem> out;
  for (auto piece : pieces)
    p.feed(piece, out);
  return out;
}

std::string describe(const std::vector<SseItem>& items) {
  std::string s;
  for (const auto& i : items) {
    s += i.kind == SseItemKind::event ? "E" : i.kind == SseItemKind::comment ? "C" : "D";
    s += "[" + i.event + "|" + i.data + "]";
  }
  return s;
}

// Every line-end style, a multi-line event, comments, an event name, a field without a value and the
// sentinel, in one stream.
const std::string kFixture = ": keep-alive\n\n"
                             "data: {\"a\":1}\n\n"
                             "data:no-space\r\n\r\n"
                             "event: delta\r\ndata: line1\r\ndata:  two spaces\r\n\r\n"
                             "data: cr only\r\rid: 7\ndata\ndata: after empty\n\n"
                             ":\n"
                             "retry: 10\n\n"
                             "data: [DONE]\n\n";

const std::string kExpected = "C[| keep-alive]"
                              "E[|{\"a\":1}]"
                              "E[|no-space]"
                              "E[delta|line1\n two spaces]"
                              "E[|cr only]"
                              "E[|\nafter empty]"
                              "C[|]"
                              "D[|[DONE]]";

} // namespace

BOOST_AUTO_TEST_SUITE(sse_parser)

BOOST_AUTO_TEST_CASE(whole_fixture_in_one_piece) { BOOST_TEST(describe(parse_pieces({kFixture})) == kExpected); }

BOOST_AUTO_TEST_CASE(every_single_split_offset_gives_the_same_items) {
  std::string_view f = kFixture;
  for (std::size_t i = 0; i <= f.size(); ++i) {
    BOOST_TEST_CONTEXT("split at " << i) {
      BOOST_TEST(describe(parse_pieces({f.substr(0, i), f.substr(i)})) == kExpected);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_pair_of_split_offsets_gives_the_same_items) {
  std::string_view f = kFixture;
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i <= f.size(); ++i)
    for (std::size_t j = i; j <= f.size(); ++j) {
      auto got = describe(parse_pieces({f.substr(0, i), f.substr(i, j - i), f.substr(j)}));
      if (got != kExpected && mismatches++ == 0)
        BOOST_TEST_MESSAGE("first mismatch: split at " << i << "," << j << ": " << got);
    }
  BOOST_TEST(mismatches == 0u);
}

BOOST_AUTO_TEST_CASE(byte_at_a_time) {
  SseParser p;
  std::vector<SseItem> out;
  for (char c : kFixture)
    p.feed(std::string_view(&c, 1), out);
  BOOST_TEST(describe(out) == kExpected);
}

BOOST_AUTO_TEST_CASE(crlf_split_between_cr_and_lf_is_one_line_end) {
  // If the \n after a \r were taken as a second line end, the event would be dispatched early and the
  // second data line would become its own event.
  auto items = parse_pieces({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  BOOST_TEST(describe(items) == "E[|a\nb]");
}

BOOST_AUTO_TEST_CASE(comments_are_reported_separately_and_do_not_end_events) {
  auto items = parse_pieces({"data: x\n: ping\ndata: y\n\n"});
  BOOST_TEST(describe(items) == "C[| ping]E[|x\ny]");
}

BOOST_AUTO_TEST_CASE(blank_lines_without_data_dispatch_nothing) {
  auto items = parse_pieces({"\n\n\r\n\nevent: x\n\n"});
  BOOST_TEST(items.empty());
}

BOOST_AUTO_TEST_CASE(done_only_when_the_whole_data_is_the_sentinel) {
  BOOST_TEST(describe(parse_pieces({"data: [DONE] \n\n"})) == "E[|[DONE] ]");
  BOOST_TEST(describe(parse_pieces({"data:[DONE]\n\n"})) == "D[|[DONE]]");
}

BOOST_AUTO_TEST_CASE(unterminated_event_is_not_dispatched_and_is_reported_partial) {
  SseParser p;
  std::vector<SseItem> out;
  p.feed("data: {\"a\":1}\n\ndata: {\"cut", out);
  BOOST_TEST(out.size() == 1u);
  BOOST_TEST(p.has_partial());
  p.feed("\"}\n", out);
  BOOST_TEST(out.size() == 1u);
  BOOST_TEST(p.has_partial());
  p.feed("\n", out);
  BOOST_TEST(out.size() == 2u);
  BOOST_TEST(!p.has_partial());
}

BOOST_AUTO_TEST_CASE(oversized_line_is_an_error) {
  SseParser p;
  std::vector<SseItem> out;
  std::string big(1 << 20, 'x');
  BOOST_CHECK_THROW(
      {
        for (std::size_t i = 0; i <= SseParser::kMaxEventBytes / big.size(); ++i)
          p.feed(big, out);
      },
      std::length_error);
}

BOOST_AUTO_TEST_CASE(a_parser_with_a_smaller_limit_refuses_an_event_past_it) {
  SseParser p(16);
  std::vector<SseItem> out;
  p.feed("data: 0123456789\n\n", out);  // 10 bytes of data: under the limit
  BOOST_TEST(out.size() == 1u);
  BOOST_CHECK_THROW(p.feed("data: 0123456789\ndata: 0123456789\n", out), std::length_error);
  SseParser q(16);
  BOOST_CHECK_THROW(q.feed("data: 0123456789abcdef", out), std::length_error);  // one unfinished line
}

BOOST_AUTO_TEST_SUITE_END()
