#include "protocol/jsonrpc.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp::jsonrpc;
namespace json = boost::json;

namespace {
Inbound classify_text(std::string_view text) { return classify(json::parse(text)); }
const Rejected& rejected(const Inbound& in) { return std::get<Rejected>(in); }
} // namespace

BOOST_AUTO_TEST_SUITE(jsonrpc_envelope)

BOOST_AUTO_TEST_CASE(requests_keep_their_id_type) {
  auto a = std::get<Request>(classify_text(R"({"jsonrpc":"2.0","id":7,"method":"m"})"));
  BOOST_TEST(serialize_response(a.id, json::object{}) == R"({"jsonrpc":"2.0","id":7,"result":{}})");
  auto b = std::get<Request>(classify_text(R"({"jsonrpc":"2.0","id":"7","method":"m","params":{"x":1}})"));
  BOOST_TEST(serialize_response(b.id, nullptr) == R"({"jsonrpc":"2.0","id":"7","result":null})");
  BOOST_TEST(b.params.at("x").as_int64() == 1);
}

BOOST_AUTO_TEST_CASE(absent_params_read_as_an_empty_object) {
  auto r = std::get<Request>(classify_text(R"({"jsonrpc":"2.0","id":1,"method":"m"})"));
  BOOST_TEST(r.params.is_object());
  BOOST_TEST(r.params.as_object().empty());
}

BOOST_AUTO_TEST_CASE(notifications_have_no_id) {
  BOOST_TEST(std::holds_alternative<Notification>(classify_text(R"({"jsonrpc":"2.0","method":"session/cancel"})")));
}

BOOST_AUTO_TEST_CASE(malformed_envelopes_are_invalid_requests) {
  struct Row {
    const char* frame;
    const char* id;  // serialised id expected in the answer
  };
  const Row rows[] = {
      {R"([{"jsonrpc":"2.0","id":1,"method":"m"}])", "null"},
      {R"("text")", "null"},
      {R"({"jsonrpc":"1.0","id":3,"method":"m"})", "3"},
      {R"({"id":4,"method":"m"})", "4"},
      {R"({"jsonrpc":"2.0","id":{},"method":"m"})", "null"},
      {R"({"jsonrpc":"2.0","id":5,"method":7})", "5"},
      {R"({"jsonrpc":"2.0","id":6})", "6"},
      {R"({"jsonrpc":"2.0","id":8,"method":"m","params":"x"})", "8"},
  };
  for (const auto& row : rows) {
    auto in = classify_text(row.frame);
    BOOST_TEST_CONTEXT(row.frame) {
      BOOST_REQUIRE(std::holds_alternative<Rejected>(in));
      BOOST_TEST(rejected(in).error.code() == code::invalid_request);
      BOOST_TEST(id_to_string(rejected(in).id) == row.id);
      BOOST_TEST(rejected(in).error.message().rfind("Invalid request", 0) == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(responses_are_recognised) {
  BOOST_TEST(std::holds_alternative<Response>(classify_text(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
  // Whatever else is wrong with a response, it is never answered: classified as one, its id kept for the log.
  const std::pair<const char*, const char*> rows[] = {
      {R"({"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}})", R"("a")"},
      {R"({"jsonrpc":"1.0","id":{"x":1},"result":null})", R"({"x":1})"},
      {R"({"result":1})", ""},
      {R"({"id":null,"error":null})", "null"},
  };
  for (const auto& [text, id] : rows) {
    auto in = classify_text(text);
    BOOST_TEST_CONTEXT(text) {
      BOOST_REQUIRE(std::holds_alternative<Response>(in));
      BOOST_TEST(std::get<Response>(in).id == id);
    }
  }
  // With a method it is a request or a notification, never a response.
  BOOST_TEST(std::holds_alternative<Request>(classify_text(R"({"jsonrpc":"2.0","id":2,"method":"m","result":{}})")));
}

BOOST_AUTO_TEST_CASE(error_factories_follow_the_contract_table) {
  BOOST_TEST(parse_error("x").code() == -32700);
  BOOST_TEST(not_initialized().message() == "Invalid request: initialize first");
  BOOST_TEST(json::serialize(oversize_frame(1024).to_json()).find(R"("data":{"maxFrameBytes":1024})") != std::string::npos);
  BOOST_TEST(json::serialize(*method_not_found("x/y").data()) == R"({"method":"x/y"})");
  auto ip = invalid_params("/prompt/0/type", "bad");
  BOOST_TEST(ip.code() == -32602);
  BOOST_TEST(ip.message().rfind("Invalid params", 0) == 0u);
  BOOST_TEST(json::serialize(*ip.data()) == R"({"path":"/prompt/0/type"})");
  BOOST_TEST(json::serialize(*resource_not_found("s").data()) == R"({"sessionId":"s"})");
  BOOST_TEST(resource_not_found("s").code() == -32002);
  BOOST_TEST(auth_required("deepseek").code() == -32000);
  BOOST_TEST(session_busy().message().rfind("Session busy", 0) == 0u);
  BOOST_TEST(internal("d").message() == "Internal error");
}

// A string that was not made text where it entered still leaves as JSON text (issue 27).
BOOST_AUTO_TEST_CASE(frames_are_utf8_whatever_their_strings_hold) {
  const json::object bad{{"text", "A\xFF" "B"}, {"path", "n\xE4me"}};
  for (const std::string& frame :
       {serialize_notification("session/update", bad), serialize_response(std::int64_t(1), bad),
        serialize_request(2, "fs/write_text_file", bad),
        serialize_error(std::int64_t(3), RpcError(-32603, "Internal error: \xC0\xAF", bad))}) {
    json::value v = json::parse(frame);  // throws on bytes that are not UTF-8
    BOOST_TEST(frame.find("A\xEF\xBF\xBD" "B") != std::string::npos, frame);
    BOOST_TEST(frame.find("n\xEF\xBF\xBD" "me") != std::string::npos, frame);
    BOOST_TEST(v.is_object());
  }
}

BOOST_AUTO_TEST_SUITE_END()
