// Requests to a peer (the ACP client here): ids, answers, errors, cancellation (withdrawn with
// $/cancel_request), the bound, and release of every waiting caller when the connection closes.
#include "transport/outbound_calls.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace acp;

namespace {

struct Sent {
  std::string key;
  json::value frame;
};

struct Rig {
  asio::io_context io;
  std::vector<Sent> sent;
  transport::OutboundCalls calls{io.get_executor(),
                                 [this](const std::string& key, std::string frame) { sent.push_back({key, json::parse(frame)}); },
                                 transport::OutboundCalls::acp_cancel_frame, 2};

  // Starts a call; its outcome lands in `result` / `failure`.
  struct Outcome {
    std::optional<json::value> result;
    std::exception_ptr failure;
    bool done = false;
  };
  std::shared_ptr<Outcome> start(std::string method, asio::cancellation_signal* cancel = nullptr) {
    auto out = std::make_shared<Outcome>();
    auto handler = [out](std::exception_ptr e, json::value v) {
      out->done = true;
      if (e) out->failure = e;
      else out->result = std::move(v);
    };
    auto call = calls.call("s1", std::move(method), json::object{{"path", "/x"}});
    if (cancel) asio::co_spawn(io, std::move(call), asio::bind_cancellation_slot(cancel->slot(), handler));
    else asio::co_spawn(io, std::move(call), handler);
    io.poll();
    io.restart();
    return out;
  }
  jsonrpc::Response answer(std::string_view frame) {
    return std::get<jsonrpc::Response>(jsonrpc::classify(json::parse(frame)));
  }
  void settle() {
    io.poll();
    io.restart();
  }
};

template <class E>
const E* failure_as(const std::exception_ptr& p, std::optional<E>& holder) {
  try {
    std::rethrow_exception(p);
  } catch (const E& e) {
    holder.emplace(e);
  } catch (...) {
  }
  return holder ? &*holder : nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(outbound_calls)

BOOST_AUTO_TEST_CASE(a_call_is_sent_on_its_stream_and_returns_the_answer) {
  Rig rig;
  auto out = rig.start("fs/read_text_file");
  BOOST_REQUIRE(rig.sent.size() == 1u);
  BOOST_TEST(rig.sent[0].key == "s1");
  BOOST_TEST(json::serialize(rig.sent[0].frame) ==
             R"({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/x"}})");
  BOOST_TEST(!out->done);
  BOOST_TEST(rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":1,"result":{"content":"hi"}})")));
  rig.settle();
  BOOST_REQUIRE(out->done);
  BOOST_TEST(json::serialize(*out->result) == R"({"content":"hi"})");
  BOOST_TEST(rig.calls.waiting() == 0u);
  // The same answer again, an id we never used, a string id: matched by nothing.
  BOOST_TEST(!rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
  BOOST_TEST(!rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":99,"result":{}})")));
  auto second = rig.start("fs/read_text_file");
  BOOST_TEST(rig.sent.back().frame.at("id").as_int64() == 2);
  BOOST_TEST(!rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":"2","result":{}})")));
  BOOST_TEST(!second->done);
}

BOOST_AUTO_TEST_CASE(an_error_answer_reaches_the_caller) {
  Rig rig;
  auto out = rig.start("terminal/create");
  rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no terminals","data":{"x":1}}})"));
  rig.settle();
  std::optional<protocol::ClientCallFailed> failed;
  BOOST_REQUIRE(failure_as(out->failure, failed));
  BOOST_TEST(failed->error().code() == -32601);
  BOOST_TEST(failed->error().message() == "no terminals");
  BOOST_TEST(json::serialize(*failed->error().data()) == R"({"x":1})");
  // A malformed error object still ends the call, as an internal error naming what came.
  auto bad = rig.start("terminal/create");
  rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":2,"error":"nope"})"));
  rig.settle();
  std::optional<protocol::ClientCallFailed> malformed;
  BOOST_REQUIRE(failure_as(bad->failure, malformed));
  BOOST_TEST(malformed->error().code() == -32603);
}

BOOST_AUTO_TEST_CASE(a_cancelled_caller_withdraws_its_request) {
  Rig rig;
  asio::cancellation_signal cancel;
  auto out = rig.start("session/request_permission", &cancel);
  cancel.emit(asio::cancellation_type::terminal);
  rig.settle();
  BOOST_REQUIRE(out->done);
  std::optional<protocol::ClientCallAborted> aborted;
  BOOST_REQUIRE(failure_as(out->failure, aborted));
  BOOST_TEST(aborted->cancelled());
  BOOST_REQUIRE(rig.sent.size() == 2u);
  BOOST_TEST(json::serialize(rig.sent[1].frame) == R"({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}})");
  BOOST_TEST(rig.sent[1].key == "s1");
  // The client's late answer is ignored.
  BOOST_TEST(!rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}})")));
}

BOOST_AUTO_TEST_CASE(waiting_calls_are_bounded_and_released_on_close) {
  Rig rig;
  auto a = rig.start("fs/read_text_file");
  auto b = rig.start("fs/read_text_file");
  auto c = rig.start("fs/read_text_file");  // the bound is 2
  std::optional<protocol::ClientCallAborted> refused;
  BOOST_REQUIRE(c->done);
  BOOST_REQUIRE(failure_as(c->failure, refused));
  BOOST_TEST(std::string(refused->what()).find("2 requests to the peer are waiting") != std::string::npos);
  rig.calls.close("the client closed its input");
  rig.settle();
  for (auto& out : {a, b}) {
    BOOST_REQUIRE(out->done);
    std::optional<protocol::ClientCallAborted> closed;
    BOOST_REQUIRE(failure_as(out->failure, closed));
    BOOST_TEST(std::string(closed->what()) == "the client closed its input");
    BOOST_TEST(!closed->cancelled());
  }
  auto late = rig.start("fs/read_text_file");
  BOOST_TEST(late->done);
  BOOST_TEST(rig.sent.size() == 2u);  // nothing sent once closed
}

BOOST_AUTO_TEST_CASE(a_frame_with_both_result_and_error_or_neither_fails_the_call) {
  Rig rig;
  // An approval beside an error is no approval: the caller gets a failure, never the result.
  auto both = rig.start("session/request_permission");
  BOOST_TEST(rig.calls.complete(rig.answer(
      R"({"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}},"error":{"code":-32603,"message":"x"}})")));
  rig.settle();
  BOOST_REQUIRE(both->done);
  BOOST_TEST(!both->result);
  std::optional<protocol::ClientCallFailed> failed;
  BOOST_REQUIRE(failure_as(both->failure, failed));
  BOOST_TEST(failed->error().code() == jsonrpc::code::invalid_request);
  BOOST_TEST(failed->error().message() == "Invalid request: invalid response: it holds both result and error");
  // The error first, then the result: the same.
  auto reversed = rig.start("session/request_permission");
  BOOST_TEST(rig.calls.complete(rig.answer(R"({"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"},"result":{}})")));
  rig.settle();
  std::optional<protocol::ClientCallFailed> failed_too;
  BOOST_REQUIRE(failure_as(reversed->failure, failed_too));
  BOOST_TEST(!reversed->result);
  // Neither: classified as an invalid request (answered so), and it also ends our request.
  auto neither = rig.start("session/request_permission");
  auto in = jsonrpc::classify(json::parse(R"({"jsonrpc":"2.0","id":3})"));
  auto* rejected = std::get_if<jsonrpc::Rejected>(&in);
  BOOST_REQUIRE(rejected);
  BOOST_REQUIRE(rejected->as_response);
  BOOST_TEST(rig.calls.complete(std::move(*rejected->as_response)));
  rig.settle();
  std::optional<protocol::ClientCallFailed> failed_neither;
  BOOST_REQUIRE(failure_as(neither->failure, failed_neither));
  BOOST_TEST(failed_neither->error().message() == "Invalid request: invalid response: it holds neither result nor error");
  BOOST_TEST(rig.calls.waiting() == 0u);
  // With params or a string id it is a request missing its method, nothing of ours.
  for (std::string_view text : {R"({"jsonrpc":"2.0","id":4,"params":{}})", R"({"jsonrpc":"2.0","id":"4"})"}) {
    auto other = jsonrpc::classify(json::parse(text));
    BOOST_TEST(!std::get<jsonrpc::Rejected>(other).as_response, text);
  }
}

BOOST_AUTO_TEST_SUITE_END()
