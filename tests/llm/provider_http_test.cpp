// The provider against a real scripted HTTP server on 127.0.0.1: streaming, limits, retries, errors,
// cancellation. Timing assertions are bounds with wide (≥ 5x) margins.
#include "provider_harness.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/test/unit_test.hpp>

#include <thread>

using namespace acp::llm;
using namespace acp::llm::testing;
namespace net = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const std::string kDone = "data: [DONE]\n\n";

std::string content(std::string_view text, std::string_view finish = {}) {
  return sse_chunk_event(json::serialize(json::object{{"content", text}}), finish);
}

/// A complete, well-formed stream answering `text`.
Script answer(std::string text) {
  return [text](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(sse_chunk_event(R"({"role":"assistant","content":""})"));
    co_await c.chunk(content(text));
    co_await c.chunk(sse_chunk_event("{}", "stop"));
    co_await c.chunk(kDone);
    co_await c.end_chunks();
  };
}

Script error_response(int status, std::string body, std::string headers = {}) {
  return [=](ServerConn& c) -> net::awaitable<void> { co_await c.respond(status, body, headers); };
}

struct Fixture {
  net::io_context ioc;
};

} // namespace

BOOST_AUTO_TEST_SUITE(provider_http)

BOOST_FIXTURE_TEST_CASE(normal_stream_and_request_shape, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(sse_chunk_event(R"({"role":"assistant","content":""})"));
    co_await c.chunk(content("Hel"));
    co_await c.chunk(content("lo"));
    co_await c.chunk(sse_chunk_event("{}", "stop"));
    co_await c.chunk(kDone);
    co_await c.end_chunks();
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "Hello");
  BOOST_TEST(r.deltas.size() == 2u);
  BOOST_TEST((r.completion->stop == StopKind::end_turn));
  BOOST_TEST(r.completion->provider == "openai");
  BOOST_TEST(r.completion->model == "test-model");
  BOOST_TEST(!r.completion->usage.has_value());

  auto reqs = server.requests();
  BOOST_REQUIRE(reqs.size() == 1u);
  BOOST_TEST(reqs[0].method == "POST");
  BOOST_TEST(reqs[0].target == "/v1/chat/completions");
  BOOST_TEST(reqs[0].headers["content-type"] == "application/json");
  BOOST_TEST(reqs[0].headers.count("authorization") == 0u);  // no key configured
  BOOST_TEST(reqs[0].headers["host"] == "127.0.0.1:" + std::to_string(server.port()));
  auto body = json::parse(reqs[0].body);
  BOOST_TEST(body.at("model").as_string() == "test-model");
  BOOST_TEST(body.at("stream").as_bool());
  BOOST_TEST(body.at("stream_options").at("include_usage").as_bool());
  BOOST_TEST(body.at("messages").as_array().size() == 2u);
  BOOST_TEST(body.at("messages").at(1).at("content").as_string() == "hello");
}

BOOST_FIXTURE_TEST_CASE(api_key_and_request_model_are_sent, Fixture) {
  ScriptedServer server({answer("ok")});
  auto cfg = test_config(server);
  cfg.api_key = "sk-test";
  cfg.base_url = server.base_url("localhost", "");  // no path, by name
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  Request req = simple_request();
  req.model = "other-model";
  auto r = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.completion->model == "other-model");
  auto reqs = server.requests();
  BOOST_REQUIRE(reqs.size() == 1u);
  BOOST_TEST(reqs[0].target == "/chat/completions");
  BOOST_TEST(reqs[0].headers["authorization"] == "Bearer sk-test");
  BOOST_TEST(json::parse(reqs[0].body).at("model").as_string() == "other-model");
}

BOOST_FIXTURE_TEST_CASE(tool_calls_and_tool_messages_reach_the_server, Fixture) {
  ScriptedServer server({answer("ok")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  Request req{{{Role::system, "sys"},
               {Role::user, "look"},
               {Role::assistant, "Reading both.", {{"call_a", "read", R"({"path":"a"})"}, {"call_b", "read", "{}"}}},
               {Role::tool, "A", {}, "call_a"},
               {Role::tool, "(no output)", {}, "call_b"},
               {Role::user, "and?"}},
              "", Purpose::answer, std::nullopt};
  auto r = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r.completion.has_value());
  auto reqs = server.requests();
  BOOST_REQUIRE(reqs.size() == 1u);
  const auto msgs = json::parse(reqs[0].body).at("messages").as_array();
  BOOST_REQUIRE(msgs.size() == 6u);
  BOOST_TEST(json::serialize(msgs[2]) ==
             R"({"role":"assistant","content":"Reading both.","tool_calls":[)"
             R"({"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},)"
             R"({"id":"call_b","type":"function","function":{"name":"read","arguments":"{}"}}]})");
  BOOST_TEST(json::serialize(msgs[3]) == R"({"role":"tool","tool_call_id":"call_a","content":"A"})");
  BOOST_TEST(json::serialize(msgs[4]) == R"j({"role":"tool","tool_call_id":"call_b","content":"(no output)"})j");
  BOOST_TEST(msgs[5].at("role").as_string() == "user");
}

// A real server on loopback streams a call: the tools go out in the request, the fragments come
// back as tool_call deltas and the completion holds the whole call. Calls of tools not offered are
// dropped (a server's own), never handed to the caller to run.
BOOST_FIXTURE_TEST_CASE(streamed_tool_calls_are_assembled_and_only_offered_tools_count, Fixture) {
  auto script = [](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(sse_chunk_event(R"({"role":"assistant","content":"Let me look."})"));
    co_await c.chunk(sse_chunk_event(R"({"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"read","arguments":"{\"file_path\""}}]})"));
    co_await c.chunk(sse_chunk_event(R"({"tool_calls":[{"index":0,"function":{"arguments":":\"a.cpp\"}"}}]})"));
    co_await c.chunk(sse_chunk_event("{}", "tool_calls"));
    co_await c.chunk(kDone);
    co_await c.end_chunks();
  };
  ScriptedServer server({script, script});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  Request req = simple_request();
  req.tools = {{"read", "Read a file", R"({"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]})"}};
  auto r = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "Let me look.");
  BOOST_REQUIRE(r.completion->tool_calls.size() == 1u);
  BOOST_TEST(r.completion->tool_calls[0].id == "call_x");
  BOOST_TEST(r.completion->tool_calls[0].name == "read");
  BOOST_TEST(r.completion->tool_calls[0].arguments == R"({"file_path":"a.cpp"})");
  BOOST_TEST(r.text(DeltaKind::tool_call) == R"({"file_path":"a.cpp"})");
  auto body = json::parse(server.requests().at(0).body);
  BOOST_TEST(body.at("tools").at(0).at("function").at("name").as_string() == "read");

  auto plain = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(plain.completion.has_value());
  // Filtering the calls out keeps the consumer's gate: the provider still waits for room.
  BOOST_TEST(plain.rooms >= 1u);
  BOOST_TEST(plain.completion->tool_calls.empty());
  BOOST_TEST(plain.text(DeltaKind::tool_call).empty());
  BOOST_TEST(plain.text() == "Let me look.");
  BOOST_TEST(!json::parse(server.requests().at(1).body).as_object().contains("tools"));
}

BOOST_FIXTURE_TEST_CASE(reasoning_then_content_in_order, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(sse_chunk_event(R"({"role":"assistant","content":null,"reasoning_content":"Let me "})"));
    co_await c.chunk(sse_chunk_event(R"({"content":null,"reasoning_content":"think."})"));
    co_await c.chunk(sse_chunk_event(R"j({"reasoning":" (vllm)"})j"));
    co_await c.chunk(sse_chunk_event(R"({"content":"Answer","reasoning_content":null})"));
    co_await c.chunk(sse_chunk_event("{}", "stop") + kDone);
    co_await c.end_chunks();
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_REQUIRE(r.deltas.size() == 4u);
  BOOST_TEST((r.deltas[0].kind == DeltaKind::reasoning));
  BOOST_TEST((r.deltas[2].kind == DeltaKind::reasoning));
  BOOST_TEST((r.deltas[3].kind == DeltaKind::text));
  BOOST_TEST(r.text(DeltaKind::reasoning) == "Let me think. (vllm)");
  BOOST_TEST(r.text() == "Answer");
}

BOOST_FIXTURE_TEST_CASE(usage_and_length_stop, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(content("cut"));
    co_await c.chunk(sse_chunk_event("{}", "length"));
    co_await c.chunk(R"(data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,)"
                     R"("prompt_cache_hit_tokens":8,"prompt_cache_miss_tokens":4,)"
                     R"("completion_tokens_details":{"reasoning_tokens":1}}})"
                     "\n\n");
    co_await c.chunk(kDone);
    co_await c.end_chunks();
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST((r.completion->stop == StopKind::max_tokens));
  BOOST_REQUIRE(r.completion->usage.has_value());
  BOOST_TEST(r.completion->usage->input_tokens == 12);
  BOOST_TEST(r.completion->usage->output_tokens == 3);
  BOOST_TEST(r.completion->usage->cached_input_tokens.value_or(-1) == 8);
  BOOST_TEST(r.completion->usage->reasoning_tokens.value_or(-1) == 1);
}

BOOST_FIXTURE_TEST_CASE(events_split_across_reads_multiline_and_crlf, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    std::string ev = content("A");
    // An event split inside its JSON, in two chunks that arrive separately.
    co_await c.chunk(ev.substr(0, 25));
    co_await c.sleep(30ms);
    co_await c.chunk(ev.substr(25));
    // Multi-line data (JSON split over two data lines), CRLF line ends, a CRLF split after the CR.
    co_await c.chunk("data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"B\"}}]}\r");
    co_await c.sleep(30ms);
    co_await c.chunk("\n\r\n: comment\r\n\r\n");
    co_await c.chunk(content("C", "stop") + "data: [DO");
    co_await c.sleep(30ms);
    co_await c.chunk("NE]\n\n");
    co_await c.end_chunks();
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "ABC");
  BOOST_TEST(r.deltas.size() == 3u);
}

BOOST_FIXTURE_TEST_CASE(unchunked_body_closed_by_server_after_done, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    co_await c.write(content("x"));
    co_await c.write(content("y", "stop") + kDone);
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "xy");
}

BOOST_FIXTURE_TEST_CASE(non_streaming_json_answer_is_an_error_and_not_retried, Fixture) {
  ScriptedServer server({error_response(200, R"({"choices":[{"message":{"content":"whole"}}]})"), answer("no")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(std::string(r.error->what()).find("application/json") != std::string::npos);
  BOOST_TEST(server.connections() == 1);
}

// The servers below send comments until the client goes away (a write fails): were the idle timer
// reset by them, only the overall deadline (30 s, another message) could end the request.
BOOST_FIXTURE_TEST_CASE(keep_alive_comments_do_not_extend_the_idle_timeout, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(content("first"));
    for (;;) {
      co_await c.sleep(50ms);
      co_await c.chunk(": keep-alive\n\n");
    }
  }});
  auto cfg = test_config(server);
  cfg.idle_timeout_ms = 300;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_TIMEOUT");
  BOOST_TEST(std::string(r.error->what()).find("no data from") != std::string::npos, r.error->what());
  BOOST_TEST(r.error->output_started());
  BOOST_TEST(r.text() == "first");
  BOOST_TEST(r.elapsed.count() >= 300);
  BOOST_TEST(server.connections() == 1);
}

BOOST_FIXTURE_TEST_CASE(idle_timeout_before_any_data_is_not_retried, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
                           co_await c.start_sse();
                           for (;;) {
                             co_await c.sleep(50ms);
                             co_await c.chunk(": keep-alive\n\n");
                           }
                         },
                         answer("should not be reached")});
  auto cfg = test_config(server);
  cfg.idle_timeout_ms = 300;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_TIMEOUT");
  BOOST_TEST(std::string(r.error->what()).find("no data from") != std::string::npos, r.error->what());
  BOOST_TEST(!r.error->output_started());
  BOOST_TEST(r.elapsed.count() >= 300);
  BOOST_TEST(server.connections() == 1);
}

// Data flows until the client goes away, and the idle limit is far off: only the overall deadline
// can end the request.
BOOST_FIXTURE_TEST_CASE(overall_deadline_fires_even_while_data_flows, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    for (;;) {
      co_await c.chunk(content("."));
      co_await c.sleep(25ms);
    }
  }});
  auto cfg = test_config(server);
  cfg.idle_timeout_ms = 3600000;
  cfg.request_timeout_ms = 500;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_TIMEOUT");
  BOOST_TEST(std::string(r.error->what()).find("overall") != std::string::npos);
  BOOST_TEST(r.error->output_started());
  BOOST_TEST(r.elapsed.count() >= 500);
}

BOOST_FIXTURE_TEST_CASE(rate_limited_then_success_honours_retry_after, Fixture) {
  ScriptedServer server({error_response(429, R"({"error":{"message":"Rate limit reached"}})", "Retry-After: 1\r\n"),
                         answer("after retry")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());  // retry_base_ms = 10
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "after retry");
  BOOST_TEST(server.connections() == 2);
  BOOST_TEST(r.elapsed.count() >= 950);  // Retry-After: 1, not the 10 ms base backoff
  auto reqs = server.requests();
  BOOST_REQUIRE(reqs.size() == 2u);
  BOOST_TEST(reqs[0].body == reqs[1].body);
}

BOOST_FIXTURE_TEST_CASE(server_errors_before_output_are_retried_up_to_max_retries, Fixture) {
  ScriptedServer server({error_response(503, R"({"error":{"message":"Server overloaded"}})"),
                         error_response(500, R"({"error":{"message":"Internal"}})"),
                         error_response(503, R"({"error":{"message":"Server overloaded, again"}})"),
                         answer("too late")});
  auto cfg = test_config(server);
  cfg.max_retries = 2;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(r.error->http_status() == 503);
  BOOST_TEST(std::string(r.error->what()) == "Server overloaded, again");
  BOOST_TEST(!r.error->output_started());
  BOOST_TEST(server.connections() == 3);
}

BOOST_FIXTURE_TEST_CASE(failure_after_partial_output_is_not_retried, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
                           co_await c.start_sse();
                           co_await c.chunk(content("partial "));
                           co_await c.chunk(R"(data: {"error":{"message":"Internal server error","code":500}})"
                                            "\n\n");
                           co_await c.end_chunks();
                         },
                         answer("must not be used")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(std::string(r.error->what()) == "Internal server error");
  BOOST_TEST(r.error->output_started());
  BOOST_TEST(r.text() == "partial ");
  BOOST_TEST(server.connections() == 1);
}

BOOST_FIXTURE_TEST_CASE(unauthorized_is_auth_required_and_not_retried, Fixture) {
  ScriptedServer server(
      {error_response(401, R"j({"error":{"message":"Authentication Fails (no such user)","type":"authentication_error"}})j"),
       answer("no")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "AUTH_REQUIRED");
  BOOST_TEST(r.error->http_status() == 401);
  BOOST_TEST(std::string(r.error->what()) == "Authentication Fails (no such user)");
  BOOST_TEST(server.connections() == 1);
}

BOOST_FIXTURE_TEST_CASE(payment_required_and_bad_request_codes, Fixture) {
  ScriptedServer server({error_response(402, R"({"error":{"message":"Insufficient Balance"}})"),
                         error_response(400, R"({"error":{"message":"Invalid model name"}})"),
                         error_response(422, "{}")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r1 = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r1.error.has_value());
  BOOST_TEST(r1.error->code() == "PROVIDER_INSUFFICIENT_BALANCE");
  BOOST_TEST(std::string(r1.error->what()) == "Insufficient Balance");
  auto r2 = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r2.error.has_value());
  BOOST_TEST(r2.error->code() == "PROVIDER_BAD_REQUEST");
  BOOST_TEST(r2.error->http_status() == 400);
  BOOST_TEST(std::string(r2.error->what()) == "Invalid model name");
  auto r3 = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r3.error.has_value());
  BOOST_TEST(r3.error->code() == "PROVIDER_BAD_REQUEST");
  BOOST_TEST(std::string(r3.error->what()).find("HTTP 422") != std::string::npos);
  BOOST_TEST(server.connections() == 3);  // one each: none retried
}

BOOST_FIXTURE_TEST_CASE(malformed_sse_is_a_protocol_error, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
                           co_await c.start_sse();
                           co_await c.chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n");
                           co_await c.chunk(kDone);
                           co_await c.end_chunks();
                         },
                         answer("not retried")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(std::string(r.error->what()).find("malformed") != std::string::npos);
  BOOST_TEST(!r.error->output_started());
  BOOST_TEST(server.connections() == 1);
}

BOOST_FIXTURE_TEST_CASE(disconnect_mid_stream_after_output, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
                           co_await c.start_sse();
                           co_await c.chunk(content("half an "));
                           co_await c.write("40\r\ndata: {\"choi");  // a chunk cut short, then close
                         },
                         answer("not retried")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_NETWORK");
  BOOST_TEST(r.error->output_started());
  BOOST_TEST(r.text() == "half an ");
  BOOST_TEST(server.connections() == 1);
}

BOOST_FIXTURE_TEST_CASE(disconnect_before_output_is_retried, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
                           co_await c.start_sse();
                           co_await c.chunk(": keep-alive\n\n");
                         },
                         [](ServerConn&) -> net::awaitable<void> { co_return; },  // closes without a response
                         answer("third time")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "third time");
  BOOST_TEST(server.connections() == 3);
}

BOOST_FIXTURE_TEST_CASE(connection_refused_is_a_network_error, Fixture) {
  unsigned short port;
  {
    boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  OpenAiConfig cfg;
  cfg.provider = "openai";
  cfg.base_url = "http://127.0.0.1:" + std::to_string(port);
  cfg.retry_base_ms = 5;
  cfg.max_retries = 1;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_NETWORK");
  BOOST_TEST(!r.error->output_started());
}

BOOST_FIXTURE_TEST_CASE(unresolvable_host_fails_within_the_connect_timeout, Fixture) {
  OpenAiConfig cfg;
  cfg.provider = "openai";
  cfg.base_url = "http://no-such-host.invalid:9";
  cfg.allow_insecure_http = true;
  cfg.connect_timeout_ms = 1000;
  cfg.max_retries = 0;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  // NETWORK when the resolver answers, TIMEOUT when DNS is unreachable here and the watchdog fires.
  BOOST_TEST((r.error->code() == "PROVIDER_NETWORK" || r.error->code() == "PROVIDER_TIMEOUT"), r.error->code());
  BOOST_TEST_MESSAGE("failed after " << r.elapsed.count() << " ms");
}

BOOST_FIXTURE_TEST_CASE(consecutive_user_messages_rejected_then_merged_and_remembered, Fixture) {
  auto expects = [](bool merged) {
    return [merged](ServerConn& c) -> net::awaitable<void> {
      auto msgs = json::parse(c.request().body).at("messages").as_array();
      bool is_merged = msgs.size() == 2 && msgs[1].at("content").as_string() == "## Referenced\n\nuse @Alpha";
      bool is_split = msgs.size() == 3 && msgs[2].at("content").as_string() == "use @Alpha";
      if (merged ? is_merged : is_split) {
        if (merged) {
          co_await c.start_sse();
          co_await c.chunk(content("merged ok", "stop") + kDone);
          co_await c.end_chunks();
        } else {
          co_await c.respond(400, R"({"error":{"message":"deepseek-reasoner does not support successive user or )"
                                  R"(assistant messages (messages[1] and messages[2] in your input). You should )"
                                  R"(interleave the user/assistant messages in the message sequence.","type":)"
                                  R"("invalid_request_error"}})");
        }
      } else {
        co_await c.respond(400, R"({"error":{"message":"scripted server: unexpected body"}})");
      }
    };
  };
  // First request: unmerged (rejected), then merged. Second request: merged straight away.
  ScriptedServer server({expects(false), expects(true), expects(true)});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  Request req{{{Role::system, "sys"}, {Role::user, "## Referenced"}, {Role::user, "use @Alpha"}}, "", Purpose::answer,
              std::nullopt};
  auto r1 = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r1.completion.has_value());
  BOOST_TEST(r1.text() == "merged ok");
  BOOST_TEST(server.connections() == 2);
  auto r2 = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r2.completion.has_value());
  BOOST_TEST(server.connections() == 3);
}

BOOST_FIXTURE_TEST_CASE(other_bad_requests_are_not_merged_and_retried, Fixture) {
  ScriptedServer server({error_response(400, R"({"error":{"message":"Invalid model"}})"), answer("no")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  Request req{{{Role::user, "a"}, {Role::user, "b"}}, "", Purpose::answer, std::nullopt};
  auto r = run_stream(*provider, ioc, req);
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(server.connections() == 1);
}

// The streams below go on until the client goes away (a write fails): only the cancel can end them
// with "cancelled" (the overall deadline would end them with an error after 30 s).
BOOST_FIXTURE_TEST_CASE(slow_stream_cancelled_midway_returns_cancelled, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    for (;;) {
      co_await c.chunk(content("tick "));
      co_await c.sleep(25ms);
    }
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  RunOptions opt;
  opt.cancel_after_first_delta = 200ms;
  opt.cancel_armed_at = 2;
  auto r = run_stream(*provider, ioc, simple_request(), opt);
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST((r.completion->stop == StopKind::cancelled));
  BOOST_REQUIRE(r.cancel_emitted.has_value());
  BOOST_TEST_MESSAGE("answered " << ms_count(r.finished - *r.cancel_emitted) << " ms after the cancel");
  BOOST_TEST(r.deltas.size() >= 2u);
  // The connection was really closed: the server's writes start failing (a write the kernel still
  // buffers may succeed first).
  BOOST_TEST((server.wait_first_write_failure() >= *r.cancel_emitted));
}

BOOST_FIXTURE_TEST_CASE(cancel_emitted_inside_the_sink_stops_the_stream, Fixture) {
  ScriptedServer server({[](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    for (;;) {
      co_await c.chunk(content("tick "));
      co_await c.sleep(25ms);
    }
  }});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  RunOptions opt;
  opt.cancel_in_sink_at = 3;
  auto r = run_stream(*provider, ioc, simple_request(), opt);
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST((r.completion->stop == StopKind::cancelled));
  BOOST_TEST(r.deltas.size() == 3u);  // nothing is delivered after the cancellation
}

BOOST_FIXTURE_TEST_CASE(callers_throw_if_cancelled_setting_is_restored, Fixture) {
  ScriptedServer server({answer("x")});
  auto provider = make_openai_provider(test_config(server), ioc.get_executor());
  Request req = simple_request();
  std::optional<bool> after;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        co_await provider->stream(req, [](const Delta&) {});
        after = co_await net::this_coro::throw_if_cancelled();
      },
      net::detached);
  ioc.run_for(10s);
  BOOST_REQUIRE(after.has_value());
  BOOST_TEST(*after);  // Asio's default, which the provider turns off only while it runs
}

// Five minutes of backoff, past the run's one-minute guard: only the cancel can end it in time.
BOOST_FIXTURE_TEST_CASE(cancel_during_retry_backoff_returns_cancelled, Fixture) {
  ScriptedServer server({error_response(429, R"({"error":{"message":"slow down"}})", "Retry-After: 300\r\n"),
                         answer("never")});
  auto cfg = test_config(server);
  cfg.request_timeout_ms = 600000;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  RunOptions opt;
  opt.cancel_after_start = 300ms;
  auto r = run_stream(*provider, ioc, simple_request(), opt);
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST((r.completion->stop == StopKind::cancelled));
  BOOST_TEST(server.connections() == 1);
}

// The deadline is ten minutes away, past the run's one-minute guard: failing "at once" is failing
// before it, without a wall-clock bound.
BOOST_FIXTURE_TEST_CASE(retry_after_beyond_the_deadline_fails_at_once, Fixture) {
  ScriptedServer server({error_response(429, R"({"error":{"message":"come back later"}})", "Retry-After: 3600\r\n"),
                         answer("never")});
  auto cfg = test_config(server);
  cfg.request_timeout_ms = 600000;
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_RATE_LIMITED");
  BOOST_TEST(std::string(r.error->what()) == "come back later");
}

BOOST_AUTO_TEST_SUITE_END()
