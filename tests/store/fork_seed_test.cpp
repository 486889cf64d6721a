// Which prefix of a source log a fork holds (store/fork_seed.hpp): the whole log, or the events
// through a message, its turn taken to its end when no other message follows, else closed as crash
// repair closes a turn.
#include "store/fork_seed.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace acp::store;
namespace json = boost::json;

BOOST_AUTO_TEST_SUITE(fork_seed)

namespace {

// Two turns: the first a tool call and an answer in two steps, the second one answer.
const std::vector<std::string> kLog = {
    R"({"type":"turn/start","seq":0,"time":10,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}})",
    R"({"type":"user/message","seq":1,"time":10,"data":{"content":[{"type":"text","text":"one"}],"source":{"kind":"user"}},"surfaceOp":"append"})",
    R"({"type":"step/start","seq":2,"time":11,"data":{"turn":1,"step":1}})",
    R"({"type":"assistant/chunk","seq":3,"time":12,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"let me look"}}})",
    R"({"type":"assistant/message","seq":4,"time":13,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"let me look"},{"type":"tool-call","id":"c1","name":"ls","arguments":"{}"}],"provenance":{"provider":"p","model":"m"}},"sourceEventSeqs":[3],"surfaceOp":"append"})",
    R"({"type":"tool/call","seq":5,"time":14,"data":{"turn":1,"step":1,"callId":"c1","name":"ls","arguments":"{}"}})",
    R"({"type":"tool/result","seq":6,"time":15,"data":{"turn":1,"step":1,"callId":"c1","content":[],"isError":false},"sourceEventSeqs":[5],"surfaceOp":"append"})",
    R"({"type":"step/end","seq":7,"time":16,"data":{"turn":1,"step":1}})",
    R"({"type":"step/start","seq":8,"time":17,"data":{"turn":1,"step":2}})",
    R"({"type":"assistant/chunk","seq":9,"time":18,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"done"}}})",
    R"({"type":"assistant/chunk","seq":10,"time":18,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"!"}}})",
    R"({"type":"assistant/message","seq":11,"time":19,"data":{"turn":1,"step":2,"content":[{"type":"text","text":"done!"}],"provenance":{"provider":"p","model":"m"}},"sourceEventSeqs":[9,10],"surfaceOp":"append"})",
    R"({"type":"step/end","seq":12,"time":20,"data":{"turn":1,"step":2}})",
    R"({"type":"session/title","seq":13,"time":20,"data":{"title":"one","messageSeqs":[1],"source":{"kind":"fallback"}}})",
    R"({"type":"turn/end","seq":14,"time":21,"data":{"turn":1,"reason":{"kind":"completed"}}})",
    R"({"type":"turn/start","seq":15,"time":30,"data":{"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}}})",
    R"({"type":"user/message","seq":16,"time":30,"data":{"content":[{"type":"text","text":"two"}],"source":{"kind":"user"}},"surfaceOp":"append"})",
    R"({"type":"step/start","seq":17,"time":31,"data":{"turn":2,"step":1}})",
    R"({"type":"assistant/message","seq":18,"time":32,"data":{"turn":2,"step":1,"content":[{"type":"text","text":"ok"}],"provenance":{"provider":"p","model":"m"}},"surfaceOp":"append"})",
    R"({"type":"step/end","seq":19,"time":33,"data":{"turn":2,"step":1}})",
    R"({"type":"turn/end","seq":20,"time":33,"data":{"turn":2,"reason":{"kind":"completed"}}})",
};

/// The seed of kLog (its first `events` events) for a fork point at the event of seq `at` (-1: none),
/// as "seq:type" per event (closers have seqs after the copied ones).
std::vector<std::string> seed_of(std::int64_t at, std::size_t events = kLog.size()) {
  ForkSeed::FindPoint point;
  if (at >= 0) point = [at](const json::object& e) { return safe_int(e.at("seq")) == at; };
  ForkSeed seed(point);
  for (std::size_t i = 0; i < events; ++i)
    if (!seed.observe(json::parse(kLog[i]).as_object())) break;
  std::vector<std::string> out;
  for (const auto& e : seed.finish())
    out.push_back(std::to_string(*safe_int(e.at("seq"))) + ":" + std::string(e.at("type").as_string()));
  return out;
}

std::vector<std::string> prefix(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    const json::object e = json::parse(kLog[i]).as_object();
    out.push_back(std::to_string(i) + ":" + std::string(e.at("type").as_string()));
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(without_a_fork_point_the_whole_log) {
  BOOST_TEST(seed_of(-1) == prefix(kLog.size()), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_turn_left_open_in_the_source_is_closed) {
  // The source's second turn is still running (or its writer died) after its prompt.
  std::vector<std::string> expected = prefix(18);
  expected.push_back("18:step/end");
  expected.push_back("19:turn/end");
  BOOST_TEST(seed_of(-1, 18) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(at_the_last_answer_of_a_turn_the_turn_runs_to_its_end) {
  // The answer's chunks (its messageId's first event) take it through its message, its step's end,
  // the title and the turn's end: no message follows in that turn.
  BOOST_TEST(seed_of(9) == prefix(15), boost::test_tools::per_element());
  BOOST_TEST(seed_of(18) == prefix(21), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(at_a_user_message_its_answer_is_left_out_and_the_turn_closed) {
  std::vector<std::string> expected = prefix(17);
  expected.push_back("17:turn/end");
  BOOST_TEST(seed_of(16) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(at_an_answer_whose_tool_call_follows_the_call_is_closed_unrun) {
  // The first step's text: its message holds a tool call; the result after it is another message,
  // so the cut stays after the message, and the call is answered "not started".
  std::vector<std::string> expected = prefix(5);
  expected.push_back("5:tool/result");
  expected.push_back("6:step/end");
  expected.push_back("7:turn/end");
  BOOST_TEST(seed_of(3) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_fork_point_not_in_the_log_is_not_reached) {
  ForkSeed seed([](const json::object&) { return false; });
  for (const auto& line : kLog) seed.observe(json::parse(line).as_object());
  BOOST_TEST(!seed.reached());
  ForkSeed whole({});
  BOOST_TEST(whole.reached());
}

BOOST_AUTO_TEST_CASE(the_fork_event_names_its_source_and_is_ignorable) {
  ForkProvenance p;
  p.session_id = "src";
  p.store = "postgresql://db/x";
  p.owner = "bob";
  p.through_seq = 14;
  p.message_id = "m-1";
  p.seed_length = 15;
  p.inherits_choices = false;
  NewEvent e = fork_event(p);
  BOOST_TEST(e.type == "dsh-acp/fork");
  BOOST_TEST(e.ignorable);
  BOOST_TEST(json::serialize(e.data) ==
             R"({"source":{"sessionId":"src","store":"postgresql://db/x","owner":"bob"},"throughSeq":14,"messageId":"m-1","seedLength":15,"inheritsChoices":false})");
}

BOOST_AUTO_TEST_SUITE_END()
