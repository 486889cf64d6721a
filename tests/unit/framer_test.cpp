#include "transport/line_framer.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::transport;

namespace {
std::vector<FramerEvent> feed_all(LineFramer& f, std::initializer_list<std::string_view> pieces, bool finish = false) {
  std::vector<FramerEvent> out;
  for (auto p : pieces) f.feed(p, out);
  if (finish) f.finish(out);
  return out;
}
std::string frame(const FramerEvent& e) { return std::get<Frame>(e).text; }
} // namespace

BOOST_AUTO_TEST_SUITE(line_framer)

BOOST_AUTO_TEST_CASE(frames_split_across_reads_are_joined) {
  LineFramer f(1024);
  auto out = feed_all(f, {"{\"a\"", ":1}\n{\"b\":", "2}\n"});
  BOOST_REQUIRE(out.size() == 2u);
  BOOST_TEST(frame(out[0]) == "{\"a\":1}");
  BOOST_TEST(frame(out[1]) == "{\"b\":2}");
}

BOOST_AUTO_TEST_CASE(crlf_is_stripped_and_blank_lines_are_skipped) {
  LineFramer f(1024);
  auto out = feed_all(f, {"\n\r\n  \n{}\r", "\n"});
  BOOST_REQUIRE(out.size() == 1u);
  BOOST_TEST(frame(out[0]) == "{}");
}

BOOST_AUTO_TEST_CASE(every_split_point_gives_the_same_frames) {
  std::string stream = "{\"x\":\"\xE2\x82\xAC\"}\r\n\n[1,2]\n{}\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    LineFramer f(64);
    auto out = feed_all(f, {std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut)});
    BOOST_TEST_CONTEXT("cut " << cut) {
      BOOST_REQUIRE(out.size() == 3u);
      BOOST_TEST(frame(out[0]) == "{\"x\":\"\xE2\x82\xAC\"}");
      BOOST_TEST(frame(out[1]) == "[1,2]");
      BOOST_TEST(frame(out[2]) == "{}");
    }
  }
}

BOOST_AUTO_TEST_CASE(oversize_frames_are_reported_once_and_dropped_without_buffering) {
  LineFramer f(8);
  std::vector<FramerEvent> out;
  f.feed("{\"ok\":1}\n", out);            // exactly the limit
  f.feed("0123456789", out);               // over the limit, no newline yet
  for (int i = 0; i < 1000; ++i) f.feed("abcdefghij", out);
  BOOST_TEST(out.size() == 1u);
  f.feed("tail\n{}\n", out);
  BOOST_REQUIRE(out.size() == 3u);
  BOOST_TEST(frame(out[0]) == "{\"ok\":1}");
  BOOST_TEST(std::get<Oversize>(out[1]).bytes == 10u + 10000u + 4u);
  BOOST_TEST(frame(out[2]) == "{}");
}

// The notice counts the frame's own bytes: a "\r\n" or "\n" line end is not part of it, however the
// stream is split and whichever path (buffered, then over; or dropped as it arrives) found it too long.
BOOST_AUTO_TEST_CASE(oversize_counts_bytes_without_the_line_terminator) {
  const std::string body = "abcdefghij";  // 10 bytes, limit 4
  for (std::string_view end : {"\n", "\r\n"}) {
    std::string stream = body + std::string(end) + "abcde" + std::string(end) + "{}" + std::string(end);
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
      LineFramer f(4);
      auto out = feed_all(f, {std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut)});
      BOOST_TEST_CONTEXT("end " << end.size() << " cut " << cut) {
        BOOST_REQUIRE(out.size() == 3u);
        BOOST_TEST(std::get<Oversize>(out[0]).bytes == 10u);
        BOOST_TEST(std::get<Oversize>(out[1]).bytes == 5u);
        BOOST_TEST(frame(out[2]) == "{}");
      }
    }
  }
  // A '\r' inside the frame still counts; only the one before the '\n' is the line end.
  LineFramer f(4);
  auto out = feed_all(f, {"ab\rcdefgh\r", "\r\n"});
  BOOST_REQUIRE(out.size() == 1u);
  BOOST_TEST(std::get<Oversize>(out[0]).bytes == 10u);
}

BOOST_AUTO_TEST_CASE(a_frame_at_the_limit_with_crlf_is_accepted) {
  LineFramer f(4);
  auto out = feed_all(f, {"abcd\r\n", "abcde\n"});
  BOOST_REQUIRE(out.size() == 2u);
  BOOST_TEST(frame(out[0]) == "abcd");
  BOOST_TEST(std::holds_alternative<Oversize>(out[1]));
}

BOOST_AUTO_TEST_CASE(a_final_frame_without_newline_is_delivered_at_eof) {
  LineFramer f(64);
  auto out = feed_all(f, {"{}\n{\"last\":true}"}, true);
  BOOST_REQUIRE(out.size() == 2u);
  BOOST_TEST(frame(out[1]) == "{\"last\":true}");
}

// Found by fuzz_protocol (tests/fuzz/corpus/protocol/crash-final-frame-over-limit): an unterminated
// last frame one byte over the limit was delivered.
BOOST_AUTO_TEST_CASE(a_final_frame_without_newline_over_the_limit_is_oversize) {
  LineFramer f(4);
  auto out = feed_all(f, {"abcd", "e"}, true);
  BOOST_REQUIRE(out.size() == 1u);
  BOOST_TEST(std::get<Oversize>(out[0]).bytes == 5u);
  LineFramer g(4);
  out = feed_all(g, {"abcd\r"}, true);
  BOOST_REQUIRE(out.size() == 1u);
  BOOST_TEST(frame(out[0]) == "abcd");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_passes_through_to_the_parser) {
  // The framer is byte-oriented; the JSON parser rejects the bytes (-32700), so the frame must survive.
  LineFramer f(64);
  auto out = feed_all(f, {"{\"a\":\"\xFF\xFE\"}\n"});
  BOOST_REQUIRE(out.size() == 1u);
  BOOST_TEST(frame(out[0]) == "{\"a\":\"\xFF\xFE\"}");
}

BOOST_AUTO_TEST_SUITE_END()
