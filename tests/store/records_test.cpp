// Byte-exact header and envelope records (docs/store-format.md#header, docs/store-format.md#event-envelope)
// and header validity.
#include "support/json_text.hpp"
#include "store/event_builders.hpp"
#include "store/title.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::store;
namespace json = boost::json;
using acp::support::to_json_text;

BOOST_AUTO_TEST_SUITE(records)

BOOST_AUTO_TEST_CASE(header_key_order_is_byte_exact) {
  SessionHeader h;
  h.id = "s1";
  h.createdAt = 1783352113760;
  BOOST_TEST(to_json_text(header_record(h)) ==
             R"({"type":"session","version":0,"id":"s1","createdAt":1783352113760,"delegationDepth":0})");
  h.cwd = "/tmp/x";
  h.parentSession = "p";
  h.seedLength = 3;
  h.delegationDepth = 2;
  BOOST_TEST(to_json_text(header_record(h)) ==
             R"({"type":"session","version":0,"id":"s1","createdAt":1783352113760,"cwd":"/tmp/x","parentSession":"p","seedLength":3,"delegationDepth":2})");
}

BOOST_AUTO_TEST_CASE(event_envelope_key_order_is_byte_exact) {
  auto e = events::user_message("hi");
  auto rec = event_record(e.type, 1, 1783600629541, e.data, e.surfaceOp, std::nullopt);
  BOOST_TEST(to_json_text(rec) ==
             R"({"type":"user/message","seq":1,"time":1783600629541,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"})");
  auto with_sources = event_record("assistant/message", 7, 9, json::object{}, json::value("append"), json::array{5, 6});
  BOOST_TEST(to_json_text(with_sources) ==
             R"({"type":"assistant/message","seq":7,"time":9,"data":{},"sourceEventSeqs":[5,6],"surfaceOp":"append"})");
  auto closer = event_record("tool/result", 8, 9, json::object{}, json::value("append"), json::array{4},
                             SurfaceKeyOrder::surface_op_first);
  BOOST_TEST(to_json_text(closer) ==
             R"({"type":"tool/result","seq":8,"time":9,"data":{},"surfaceOp":"append","sourceEventSeqs":[4]})");
}

BOOST_AUTO_TEST_CASE(turn_event_builders_have_harness_shapes) {
  auto rec = [](const NewEvent& e) { return to_json_text(e.data); };
  BOOST_TEST(rec(events::turn_start(1)) == R"({"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}})");
  BOOST_TEST(rec(events::session_title("a b", 1)) ==
             R"({"title":"a b","messageSeqs":[1],"source":{"kind":"fallback"}})");
  BOOST_TEST(rec(events::reasoning_delta(1, 2, 0, "x")) ==
             R"({"turn":1,"step":2,"chunk":{"type":"reasoning-delta","index":0,"text":"x"}})");
  json::object usage;
  usage["inputTokens"] = 3;
  BOOST_TEST(rec(events::assistant_message(1, 1, json::array{}, "deepseek", "deepseek-flash", usage)) ==
             R"({"turn":1,"step":1,"content":[],"provenance":{"provider":"deepseek","model":"deepseek-flash"},"usage":{"inputTokens":3}})");
  BOOST_TEST(rec(events::turn_end(2, events::error_reason(1, "boom"))) ==
             R"({"turn":2,"reason":{"kind":"error","step":1,"message":"boom"}})");
  BOOST_TEST(events::fallback_title("  one two\tthree\nfour five six seven") == "one two three four five");
  BOOST_TEST(events::fallback_title("") == "");
}

// docs/store-format.md#titles: the original's fallbackSessionTitle (5 words, 40 bytes).
BOOST_AUTO_TEST_CASE(fallback_title_as_the_original) {
  // Escape sequences (CSI, OSC ended by BEL or ST, two-byte ESC) and C0/C1 controls vanish.
  BOOST_TEST(events::fallback_title("\x1b[31mred\x1b[0m alert") == "red alert");
  BOOST_TEST(events::fallback_title("\x1b]0;window title\x07hello \x1b]8;;http://x\x1b\\link") == "hello link");
  BOOST_TEST(events::fallback_title("a\x1b" "7b c\x01" "d \xc2\x9b" "31mz") == "ab cd z");
  // Zero-width, bidi and BOM characters vanish; JS whitespace (NBSP, ideographic space) separates.
  BOOST_TEST(events::fallback_title("\xef\xbb\xbfze\xe2\x80\x8bro \xe2\x80\xae" "evil\xe2\x80\xac") == "zero evil");
  BOOST_TEST(events::fallback_title("one\xc2\xa0two\xe3\x80\x80three") == "one two three");
  // At most 40 UTF-8 bytes, cut on a code-point boundary, no ellipsis.
  std::string long_word(60, 'x');
  BOOST_TEST(events::fallback_title(long_word) == std::string(40, 'x'));
  std::string accents;
  for (int i = 0; i < 30; ++i) accents += "\xc3\xa9";  // é: 2 bytes each
  BOOST_TEST(events::fallback_title(accents).size() == 40u);
  BOOST_TEST(events::fallback_title("x" + accents).size() == 39u);  // never half a code point
  BOOST_TEST(events::fallback_title("\x1b[1m\x1b[0m \xe2\x80\x8b") == "");  // nothing visible: no title
  // Stored titles are cleaned and cut the same way when listed, without the word limit.
  BOOST_TEST(listed_title("one two three four five six seven") == "one two three four five six seven");
  BOOST_TEST(listed_title(std::string(6000, 'y')) == std::string(40, 'y'));
  BOOST_TEST(listed_title("bell\x07 \x1b[2Jclear") == "bell clear");
}

BOOST_AUTO_TEST_CASE(header_validity) {
  auto parse = [](const char* text) { return parse_header(json::parse(text)); };
  auto ok = parse(R"({"type":"session","version":0,"id":"x","createdAt":5,"cwd":"/a","delegationDepth":1})");
  BOOST_REQUIRE(ok);
  BOOST_TEST(ok->id == "x");
  BOOST_TEST(*ok->cwd == "/a");
  BOOST_TEST(ok->delegationDepth == 1);
  BOOST_TEST(!parse(R"({"type":"session","version":0,"id":"x","createdAt":5})"));                        // no depth
  BOOST_TEST(!parse(R"({"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":-1})"));   // negative
  BOOST_TEST(!parse(R"({"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":1.5})"));  // not integer
  BOOST_TEST(!parse(R"({"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":-0.0})")); // -0
  BOOST_TEST(!parse(R"({"type":"session","version":"0","id":"x","createdAt":5,"delegationDepth":0})"));  // version type
  BOOST_TEST(!parse(R"({"type":"session","version":0,"id":7,"createdAt":5,"delegationDepth":0})"));
  BOOST_TEST(!parse(R"({"type":"event","version":0,"id":"x","createdAt":5,"delegationDepth":0})"));
  BOOST_TEST(!parse(R"({"version":0,"id":"x","createdAt":5,"delegationDepth":0})"));
  auto v1 = parse(R"({"type":"session","version":1,"id":"x","createdAt":5,"delegationDepth":0})");
  BOOST_REQUIRE(v1);  // valid header; the version is rejected on load, not here
  BOOST_TEST(v1->version == 1);
}

BOOST_AUTO_TEST_CASE(safe_integers) {
  BOOST_TEST(*safe_int(json::value(9007199254740991LL)) == 9007199254740991LL);
  BOOST_TEST(!safe_int(json::value(9007199254740992LL)));
  BOOST_TEST(!safe_int(json::value(1.5)));
  BOOST_TEST(*safe_int(json::value(2.0)) == 2);
  BOOST_TEST(!safe_int(json::value("1")));
}

BOOST_AUTO_TEST_SUITE_END()
