// ChatStreamDecoder: chunk JSON to deltas, stop reasons and usage.
#include "llm/openai/chat_stream.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::llm;

namespace {
std::vector<Delta> decode(ChatStreamDecoder& d, std::string_view data) {
  std::vector<Delta> out;
  d.on_data(data, out);
  return out;
}
} // namespace

BOOST_AUTO_TEST_SUITE(chat_stream)

BOOST_AUTO_TEST_CASE(content_and_both_reasoning_spellings) {
  ChatStreamDecoder d;
  auto a = decode(d, R"({"model":"deepseek-flash","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"think"}}]})");
  BOOST_REQUIRE(a.size() == 1u);
  BOOST_TEST((a[0].kind == DeltaKind::reasoning));
  BOOST_TEST(a[0].text == "think");
  auto b = decode(d, R"({"choices":[{"index":0,"delta":{"reasoning":"vllm"}}]})");
  BOOST_REQUIRE(b.size() == 1u);
  BOOST_TEST((b[0].kind == DeltaKind::reasoning));
  auto c = decode(d, R"({"choices":[{"index":0,"delta":{"content":"Hi","reasoning_content":null}}]})");
  BOOST_REQUIRE(c.size() == 1u);
  BOOST_TEST((c[0].kind == DeltaKind::text));
  BOOST_TEST(c[0].text == "Hi");
  BOOST_TEST(d.served_model() == "deepseek-flash");
  BOOST_TEST(!d.stop());
}

BOOST_AUTO_TEST_CASE(empty_and_null_content_produce_no_delta) {
  ChatStreamDecoder d;
  BOOST_TEST(decode(d, R"({"choices":[{"index":0,"delta":{"content":""}}]})").empty());
  BOOST_TEST(decode(d, R"({"choices":[{"index":0,"delta":{"content":null}}]})").empty());
  BOOST_TEST(decode(d, R"({"choices":[]})").empty());
}

BOOST_AUTO_TEST_CASE(finish_reasons_map_to_stop_kinds) {
  auto stop_of = [](std::string_view reason) {
    ChatStreamDecoder d;
    std::string data = R"({"choices":[{"index":0,"delta":{},"finish_reason":")" + std::string(reason) + "\"}]}";
    std::vector<Delta> out;
    d.on_data(data, out);
    return d.stop();
  };
  BOOST_TEST((stop_of("stop") == StopKind::end_turn));
  BOOST_TEST((stop_of("length") == StopKind::max_tokens));
  BOOST_TEST((stop_of("content_filter") == StopKind::refusal));
  BOOST_TEST((stop_of("tool_calls") == StopKind::end_turn));
  BOOST_CHECK_THROW(stop_of("insufficient_system_resource"), ProviderError);
}

BOOST_AUTO_TEST_CASE(deepseek_usage_with_cache_hits_and_reasoning_tokens) {
  ChatStreamDecoder d;
  decode(d, R"({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
    "prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36,"completion_tokens_details":{"reasoning_tokens":7}}})");
  BOOST_REQUIRE(d.usage().has_value());
  BOOST_TEST(d.usage()->input_tokens == 100);
  BOOST_TEST(d.usage()->output_tokens == 20);
  BOOST_TEST(d.usage()->cached_input_tokens.value_or(-1) == 64);
  BOOST_TEST(d.usage()->reasoning_tokens.value_or(-1) == 7);
}

BOOST_AUTO_TEST_CASE(openai_usage_with_cached_tokens_and_null_usage_ignored) {
  ChatStreamDecoder d;
  decode(d, R"({"choices":[{"index":0,"delta":{"content":"x"}}],"usage":null})");
  BOOST_TEST(!d.usage().has_value());
  decode(d, R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}})");
  BOOST_REQUIRE(d.usage().has_value());
  BOOST_TEST(d.usage()->cached_input_tokens.value_or(-1) == 2);
  BOOST_TEST(!d.usage()->reasoning_tokens.has_value());
}

// Found by the sse fuzz target: 6.66667e21 as a count was converted to int64 unchecked (UB).
BOOST_AUTO_TEST_CASE(counts_beyond_int64_are_no_counts) {
  ChatStreamDecoder d;
  decode(d, R"({"choices":[],"usage":{"prompt_tokens":6.66667e21,"completion_tokens":18446744073709551615,)"
            R"("prompt_cache_hit_tokens":-1e300,"completion_tokens_details":{"reasoning_tokens":12.0}}})");
  BOOST_REQUIRE(d.usage().has_value());
  BOOST_TEST(d.usage()->input_tokens == 0);
  BOOST_TEST(d.usage()->output_tokens == 0);
  BOOST_TEST(!d.usage()->cached_input_tokens.has_value());
  BOOST_TEST(d.usage()->reasoning_tokens.value_or(-1) == 12);
}

BOOST_AUTO_TEST_CASE(malformed_json_is_a_provider_unavailable_protocol_error) {
  ChatStreamDecoder d;
  try {
    decode(d, R"({"choices":[{"delta":)");
    BOOST_FAIL("no exception");
  } catch (const ProviderError& e) {
    BOOST_TEST(e.code() == "PROVIDER_UNAVAILABLE");
    BOOST_TEST(std::string(e.what()).find("malformed") != std::string::npos);
  }
  BOOST_CHECK_THROW(decode(d, "[1,2]"), ProviderError);
  BOOST_CHECK_THROW(decode(d, R"({"choices":7})"), ProviderError);
}

BOOST_AUTO_TEST_CASE(error_object_inside_the_stream_keeps_its_message) {
  ChatStreamDecoder d;
  try {
    decode(d, R"({"error":{"message":"model overloaded","type":"server_error"}})");
    BOOST_FAIL("no exception");
  } catch (const ProviderError& e) {
    BOOST_TEST(e.code() == "PROVIDER_UNAVAILABLE");
    BOOST_TEST(std::string(e.what()) == "model overloaded");
  }
}

// OpenAI/DeepSeek stream a call as fragments: the first with id, type and name, then arguments in
// pieces, all under one `index`; several calls interleave by index.
BOOST_AUTO_TEST_CASE(tool_call_fragments_assemble_by_index) {
  ChatStreamDecoder d;
  auto a = decode(d, R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]})");
  BOOST_REQUIRE(a.size() == 1u);
  BOOST_TEST((a[0].kind == DeltaKind::tool_call));
  BOOST_TEST(a[0].call_id == "call_1");
  BOOST_TEST(a[0].call_name == "read");
  decode(d, R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_"}}]}}]})");
  decode(d, R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"grep","arguments":"{}"}}]}}]})");
  auto b = decode(d, R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"path\":\"a\"}"}}]}}]})");
  BOOST_REQUIRE(b.size() == 1u);
  BOOST_TEST(b[0].call_index == 0u);
  BOOST_TEST(b[0].call_id == "call_1");  // known from the first fragment
  BOOST_TEST(b[0].text == "path\":\"a\"}");
  decode(d, R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})");
  BOOST_TEST((d.stop() == StopKind::end_turn));
  BOOST_REQUIRE(d.tool_calls().size() == 2u);
  BOOST_TEST(d.tool_calls()[0].id == "call_1");
  BOOST_TEST(d.tool_calls()[0].name == "read");
  BOOST_TEST(d.tool_calls()[0].arguments == R"({"file_path":"a"})");
  BOOST_TEST(d.tool_calls()[1].name == "grep");
  BOOST_TEST(d.tool_calls()[1].arguments == "{}");
}

BOOST_AUTO_TEST_CASE(malformed_tool_calls_are_protocol_errors) {
  for (std::string_view bad : {R"({"choices":[{"delta":{"tool_calls":{}}}]})", R"({"choices":[{"delta":{"tool_calls":[1]}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":100000}]}}]})"}) {
    ChatStreamDecoder d;
    BOOST_CHECK_THROW(decode(d, bad), ProviderError);
  }
}

BOOST_AUTO_TEST_SUITE_END()
