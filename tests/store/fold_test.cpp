// foldSurface (docs/store-format.md#folding): every rule, and a compaction replace.
#include "store/errors.hpp"
#include "store/fold.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::store;
namespace json = boost::json;

namespace {

std::vector<json::object> parse_events(std::initializer_list<const char*> lines) {
  std::vector<json::object> out;
  for (auto l : lines) out.push_back(json::parse(l).as_object());
  return out;
}

std::string fold_error(std::initializer_list<const char*> lines) {
  try {
    fold_surface(parse_events(lines));
  } catch (const FoldError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* const U0 = R"({"type":"user/message","seq":0,"time":1,"data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"append"})";
const char* const A1 = R"({"type":"assistant/message","seq":1,"time":1,"data":{"turn":1,"step":1,"content":[]},"sourceEventSeqs":[],"surfaceOp":"append"})";
const char* const U2 = R"({"type":"user/message","seq":2,"time":1,"data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"append"})";

} // namespace

BOOST_AUTO_TEST_SUITE(fold)

BOOST_AUTO_TEST_CASE(appends_build_the_surface) {
  auto nodes = fold_surface(parse_events({U0, A1, R"({"type":"turn/end","seq":2,"time":1,"data":{}})"}));
  BOOST_TEST((nodes == std::vector<std::int64_t>{0, 1}));
}

BOOST_AUTO_TEST_CASE(seq_must_be_contiguous) {
  BOOST_TEST(fold_error({U0, U2}) == "session event seq 2 is not contiguous; expected 1");
}

BOOST_AUTO_TEST_CASE(non_surface_events_carry_no_surface_metadata) {
  BOOST_TEST(fold_error({R"({"type":"turn/start","seq":0,"time":1,"data":{},"surfaceOp":"append"})"}) ==
             "session event seq 0 of non-surface type turn/start must not carry surfaceOp");
  BOOST_TEST(fold_error({R"({"type":"turn/start","seq":0,"time":1,"data":{},"sourceEventSeqs":[]})"}) ==
             "session event seq 0 of non-surface type turn/start must not carry sourceEventSeqs");
}

BOOST_AUTO_TEST_CASE(surface_events_need_a_valid_surface_op) {
  BOOST_TEST(fold_error({R"({"type":"tool/result","seq":0,"time":1,"data":{}})"}) ==
             "session event seq 0 of surface type tool/result requires surfaceOp");
  BOOST_TEST(fold_error({R"({"type":"user/message","seq":0,"time":1,"data":{},"surfaceOp":"replace"})"}) ==
             R"(session event seq 0 has invalid surfaceOp "replace")");
  BOOST_TEST(fold_error({U0, R"({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":0,"x":1},"sourceEventSeqs":[0]})"}) ==
             R"(session event seq 1 has invalid surfaceOp {"op":"replace","start":0,"end":0,"x":1})");
  BOOST_TEST(fold_error({U0, R"({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":{"op":"replace","start":-1,"end":0},"sourceEventSeqs":[0]})"}) ==
             R"(session event seq 1 has invalid surfaceOp {"op":"replace","start":-1,"end":0})");
  BOOST_TEST(fold_error({U0, R"({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":{"op":"swap","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             R"(session event seq 1 has invalid surfaceOp {"op":"swap","start":0,"end":0})");
}

BOOST_AUTO_TEST_CASE(provenance_rules) {
  BOOST_TEST(fold_error({R"({"type":"user/message","seq":0,"time":1,"data":{},"sourceEventSeqs":5,"surfaceOp":"append"})"}) ==
             "session event seq 0 sourceEventSeqs must be an array");
  BOOST_TEST(fold_error({R"({"type":"user/message","seq":0,"time":1,"data":{},"sourceEventSeqs":[],"surfaceOp":"append"})"}) ==
             "session event seq 0 sourceEventSeqs must not be empty for user/message");
  BOOST_TEST(fold_error({U0, A1}) == "(no error)");  // [] is allowed on assistant/message
  BOOST_TEST(fold_error({U0, R"({"type":"assistant/message","seq":1,"time":1,"data":{},"sourceEventSeqs":[0,0],"surfaceOp":"append"})"}) ==
             "session event seq 1 sourceEventSeqs contains duplicate seq 0");
  BOOST_TEST(fold_error({U0, R"({"type":"assistant/message","seq":1,"time":1,"data":{},"sourceEventSeqs":[1],"surfaceOp":"append"})"}) ==
             "session event seq 1 sourceEventSeqs references seq 1 that is not earlier");
  BOOST_TEST(fold_error({U0, R"({"type":"assistant/message","seq":1,"time":1,"data":{},"sourceEventSeqs":[-1],"surfaceOp":"append"})"}) ==
             "session event seq 1 sourceEventSeqs contains invalid seq -1");
  BOOST_TEST(fold_error({U0, R"({"type":"assistant/message","seq":1,"time":1,"data":{},"sourceEventSeqs":["a"],"surfaceOp":"append"})"}) ==
             R"(session event seq 1 sourceEventSeqs contains invalid seq "a")");
}

BOOST_AUTO_TEST_CASE(replace_rules) {
  BOOST_TEST(fold_error({U0, A1, R"({"type":"user/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":7,"end":1},"sourceEventSeqs":[0,1]})"}) ==
             "session event seq 2 replace start 7 is not on the surface");
  BOOST_TEST(fold_error({U0, A1, R"({"type":"user/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":7},"sourceEventSeqs":[0,1]})"}) ==
             "session event seq 2 replace end 7 is not on the surface");
  BOOST_TEST(fold_error({U0, A1, R"({"type":"user/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":1,"end":0},"sourceEventSeqs":[0,1]})"}) ==
             "session event seq 2 replace start 1 comes after end 0 on the surface");
  BOOST_TEST(fold_error({U0, A1, R"({"type":"user/message","seq":2,"time":1,"data":{},"surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0]})"}) ==
             "session event seq 2 replace shadows seq 1 missing from sourceEventSeqs");
}

BOOST_AUTO_TEST_CASE(tool_result_replacement_rules) {
  const char* T0 = R"({"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[{"type":"text","text":"long"}],"isError":false},"surfaceOp":"append"})";
  const char* T1 = R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"d","content":[],"isError":false},"surfaceOp":"append"})";
  BOOST_TEST(fold_error({T0, R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[{"type":"text","text":"short"}],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "(no error)");
  BOOST_TEST(fold_error({T0, T1, R"({"type":"tool/result","seq":2,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0,1]})"}) ==
             "session event seq 2 replace: a tool/result replacement must shadow exactly one node");
  BOOST_TEST(fold_error({U0, R"({"type":"tool/result","seq":1,"time":1,"data":{"content":[]},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "session event seq 1 replace: a tool/result replacement must shadow a tool/result");
  BOOST_TEST(fold_error({T0, R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"OTHER","content":[],"isError":false},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "session event seq 1 replace: a tool/result replacement may change only content");
}

BOOST_AUTO_TEST_CASE(tool_result_replacement_compares_data_as_json_values) {
  // The fold keeps only a digest of the replaced tool/result's data (it streams): the comparison must
  // still be boost::json equality: key order is irrelevant, 1 and 1.0 differ, nested values count.
  const char* const meta = R"({"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false,"meta":{"a":[1,{"b":null}],"n":1}},"surfaceOp":"append"})";
  BOOST_TEST(fold_error({meta, R"({"type":"tool/result","seq":1,"time":1,"data":{"meta":{"n":1,"a":[1,{"b":null}]},"isError":false,"content":[{"type":"text","text":"x"}],"callId":"c","step":1,"turn":1},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "(no error)");
  BOOST_TEST(fold_error({meta, R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false,"meta":{"a":[1,{"b":null}],"n":1.0}},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "session event seq 1 replace: a tool/result replacement may change only content");
  BOOST_TEST(fold_error({meta, R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false,"meta":{"a":[1,{"b":false}],"n":1}},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})"}) ==
             "session event seq 1 replace: a tool/result replacement may change only content");
  // A second replacement is checked against the first replacement's data.
  BOOST_TEST(fold_error({meta, R"({"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false,"meta":{"a":[1,{"b":null}],"n":1}},"surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]})",
                         R"({"type":"tool/result","seq":2,"time":1,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":true,"meta":{"a":[1,{"b":null}],"n":1}},"surfaceOp":{"op":"replace","start":1,"end":1},"sourceEventSeqs":[1]})"}) ==
             "session event seq 2 replace: a tool/result replacement may change only content");
}

BOOST_AUTO_TEST_CASE(compaction_replace_takes_the_position_of_start) {
  auto events = parse_events({
      U0, A1, U2,
      R"({"type":"assistant/message","seq":3,"time":1,"data":{},"sourceEventSeqs":[],"surfaceOp":"append"})",
      R"({"type":"compact/start","seq":4,"time":1,"data":{"turn":3}})",
      R"({"type":"compact/summary","seq":5,"time":1,"data":{}})",
      R"({"type":"user/message","seq":6,"time":1,"data":{"content":[{"type":"text","text":"<compacted-summary>checkpoint</compacted-summary>"}],"source":{"kind":"plugin","plugin":"compact"}},"sourceEventSeqs":[4,5,0,1,2],"surfaceOp":{"op":"replace","start":0,"end":2}})",
      R"({"type":"compact/end","seq":7,"time":1,"data":{"turn":3}})",
      R"({"type":"user/message","seq":8,"time":1,"data":{},"surfaceOp":"append"})",
  });
  BOOST_TEST((fold_surface(events) == std::vector<std::int64_t>{6, 3, 8}));
}

BOOST_AUTO_TEST_SUITE_END()
