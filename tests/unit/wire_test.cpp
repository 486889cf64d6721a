#include "support/json_text.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/types/initialize.hpp"
#include "protocol/types/session.hpp"
#include "protocol/types/updates.hpp"
#include "protocol/wire.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp;
namespace json = boost::json;

namespace {
json::value parse(std::string_view text) { return json::parse(text); }

template <class T> std::string pointer_of_failure(std::string_view text) {
  try {
    wire::decode<T>(parse(text));
  } catch (const wire::DecodeError& e) {
    return e.pointer();
  }
  return "<no error>";
}
} // namespace

BOOST_AUTO_TEST_SUITE(wire_codec)

BOOST_AUTO_TEST_CASE(prompt_request_round_trips_every_content_block) {
  std::string text =
      R"({"sessionId":"s1","prompt":[{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5}},)"
      R"({"type":"image","data":"AA==","mimeType":"image/png"},{"type":"audio","data":"AA==","mimeType":"audio/wav"},)"
      R"({"type":"resource_link","uri":"file:///a","name":"a","title":"A","size":3},)"
      R"({"type":"resource","resource":{"uri":"file:///b","text":"body","mimeType":"text/plain"}}],"_meta":{"k":1}})";
  auto req = wire::decode<protocol::PromptRequest>(parse(text));
  BOOST_TEST(req.prompt.size() == 5u);
  BOOST_TEST(std::get<protocol::TextContent>(req.prompt[0]).text == "hi");
  BOOST_TEST(std::get<protocol::ResourceLink>(req.prompt[3]).size.value() == 3);
  BOOST_TEST(*std::get<protocol::EmbeddedResource>(req.prompt[4]).resource.text == "body");
  BOOST_TEST(wire::encode(req) == parse(text));
}

BOOST_AUTO_TEST_CASE(absent_optionals_are_omitted_and_tag_is_written_first) {
  protocol::SessionNotification n{"s", protocol::AgentMessageChunk{protocol::TextContent{"x", {}, {}}, {}, {}}, {}};
  BOOST_TEST(json::serialize(wire::encode(n)) ==
             R"({"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}})");
}

BOOST_AUTO_TEST_CASE(keyword_enumerators_drop_their_trailing_underscore) {
  protocol::ToolCall call;
  call.toolCallId = "c";
  call.title = "rm";
  call.kind = protocol::ToolKind::delete_;
  auto v = wire::encode(protocol::SessionUpdate{call});
  BOOST_TEST(v.at("kind").as_string() == "delete");
  auto back = wire::decode<protocol::SessionUpdate>(v);
  BOOST_TEST((*std::get<protocol::ToolCall>(back).kind == protocol::ToolKind::delete_));
}

// Tool call content is a tagged union (https://agentclientprotocol.com/protocol/tool-calls): content blocks
// and diffs, a new file's diff without oldText; locations with an optional line.
BOOST_AUTO_TEST_CASE(tool_call_content_is_content_or_diff_by_type) {
  const std::string text =
      R"({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","content":[)"
      R"({"type":"diff","path":"/a","oldText":"x","newText":"y"},{"type":"diff","path":"/b","newText":"z"},)"
      R"({"type":"content","content":{"type":"text","text":"ok"}}],"locations":[{"path":"/a","line":3},{"path":"/b"}]})";
  auto update = std::get<protocol::ToolCallUpdate>(wire::decode<protocol::SessionUpdate>(parse(text)));
  BOOST_TEST_REQUIRE(update.content->size() == 3u);
  BOOST_TEST(*std::get<protocol::ToolDiff>((*update.content)[0]).oldText == "x");
  BOOST_TEST(!std::get<protocol::ToolDiff>((*update.content)[1]).oldText.has_value());
  BOOST_TEST(std::holds_alternative<protocol::ToolContent>((*update.content)[2]));
  BOOST_TEST(*(*update.locations)[0].line == 3u);
  BOOST_TEST(wire::encode(protocol::SessionUpdate{update}) == parse(text));
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_ignored_and_null_optionals_read_as_absent) {
  auto req = wire::decode<protocol::NewSessionRequest>(parse(R"({"cwd":"/x","future":true,"additionalDirectories":null})"));
  BOOST_TEST(req.cwd == "/x");
  BOOST_TEST(!req.additionalDirectories.has_value());
  BOOST_TEST(!req.mcpServers.has_value());
}

BOOST_AUTO_TEST_CASE(decode_errors_carry_the_json_pointer) {
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"({"sessionId":"s","prompt":[{"type":"text","text":"a"},{"type":"video"}]})") ==
             "/prompt/1/type");
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"({"sessionId":"s","prompt":[{"type":"text"}]})") == "/prompt/0/text");
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"({"prompt":[]})") == "/sessionId");
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"({"sessionId":7,"prompt":[]})") == "/sessionId");
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"({"sessionId":"s","prompt":{}})") == "/prompt");
  BOOST_TEST(pointer_of_failure<protocol::InitializeRequest>(R"({"protocolVersion":1.5})") == "/protocolVersion");
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(R"([])") == "");
}

BOOST_AUTO_TEST_CASE(integers_out_of_range_fail_with_their_pointer) {
  // Doubles are range-checked before any conversion (converting 1e300 to int64 is undefined).
  for (const char* n : {"1e300", "-1e300", "1e19", "-1e19", "9223372036854775808.0", "-9223372036854775809.0",
                        "9223372036854775807.0", "9007199254740993.0", "9007199254740992.0", "1.5", "-0.5",
                        "18446744073709551615", "18446744073709551616"}) {
    BOOST_TEST_CONTEXT(n) {
      const std::string text = std::string(R"({"protocolVersion":)") + n + "}";
      BOOST_TEST(pointer_of_failure<protocol::InitializeRequest>(text) == "/protocolVersion");
      try {
        wire::decode<protocol::InitializeRequest>(parse(text));
      } catch (const wire::DecodeError& e) {
        auto error = jsonrpc::invalid_params(e.pointer(), e.what());
        BOOST_TEST(error.code() == -32602);
        BOOST_TEST(error.data()->at("path") == "/protocolVersion");
      }
    }
  }
  const std::string nested = R"({"sessionId":"s","prompt":[{"type":"resource_link","uri":"file:///a","name":"a","size":1e300}]})";
  BOOST_TEST(pointer_of_failure<protocol::PromptRequest>(nested) == "/prompt/0/size");
}

BOOST_AUTO_TEST_CASE(integral_doubles_in_the_safe_range_are_integers) {
  auto version = [](const char* n) {
    return wire::decode<protocol::InitializeRequest>(parse(std::string(R"({"protocolVersion":)") + n + "}")).protocolVersion;
  };
  BOOST_TEST(version("1.0") == 1);
  BOOST_TEST(version("-0.0") == 0);
  BOOST_TEST(version("1e2") == 100);
  BOOST_TEST(version("123456789.0") == 123456789);
  // The boundary itself, without Boost.JSON 1.81's double parsing (not correctly rounded there).
  auto decodes = [](auto type, boost::json::value v) {
    try {
      wire::decode<decltype(type)>(v);
      return true;
    } catch (const wire::DecodeError&) {
      return false;
    }
  };
  BOOST_TEST(decodes(std::int64_t{}, 9007199254740991.0));
  BOOST_TEST(decodes(std::int64_t{}, -9007199254740991.0));
  BOOST_TEST(!decodes(std::int64_t{}, 9007199254740992.0));
  BOOST_TEST(!decodes(std::int32_t{}, 2147483648.0));
  BOOST_TEST(decodes(std::int32_t{}, -2147483648.0));
  BOOST_TEST(!decodes(std::uint32_t{}, -1.0));
  BOOST_TEST(!decodes(std::uint32_t{}, std::int64_t{4294967296}));
  BOOST_TEST(decodes(std::uint32_t{}, std::uint64_t{4294967295}));
  BOOST_TEST(!decodes(std::int64_t{}, std::uint64_t{9223372036854775808ull}));
  BOOST_TEST(version("9223372036854775807") == 9223372036854775807);
}

BOOST_AUTO_TEST_CASE(pointer_tokens_are_escaped) {
  using Map = std::map<std::string, std::string>;
  try {
    wire::decode<Map>(parse(R"({"a/b~c":1})"));
    BOOST_FAIL("expected a decode error");
  } catch (const wire::DecodeError& e) {
    BOOST_TEST(e.pointer() == "/a~1b~0c");
  }
}

BOOST_AUTO_TEST_CASE(unknown_enum_value_is_an_error_with_its_name) {
  try {
    wire::decode<protocol::PromptResponse>(parse(R"({"stopReason":"vanished"})"));
    BOOST_FAIL("expected a decode error");
  } catch (const wire::DecodeError& e) {
    BOOST_TEST(e.pointer() == "/stopReason");
    BOOST_TEST(std::string(e.what()).find("vanished") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(initialize_response_round_trips) {
  protocol::InitializeResponse r;
  r.agentCapabilities.loadSession = true;
  r.agentCapabilities.sessionCapabilities.list = json::object{};
  r.agentCapabilities.sessionCapabilities.delete_ = json::object{};
  r.agentInfo = protocol::Implementation{"dsh-acp", "t", "1"};
  auto v = wire::encode(r);
  BOOST_TEST(v.at("agentCapabilities").at("sessionCapabilities").as_object().contains("delete"));
  BOOST_TEST(wire::encode(wire::decode<protocol::InitializeResponse>(v)) == v);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(json_text)

BOOST_AUTO_TEST_CASE(unpaired_surrogate_escapes_read_as_replacement_character) {
  boost::system::error_code ec;
  bool replaced = false;
  auto v = support::parse_json(R"({"a":"x\ud800y","b":"\udc00","c":"\uD83D\uDE00","d":"\\ud800"})", ec, &replaced);
  BOOST_TEST(!ec);
  BOOST_TEST(replaced);
  BOOST_TEST(v.at("a").as_string() == "x\xEF\xBF\xBDy");
  BOOST_TEST(v.at("b").as_string() == "\xEF\xBF\xBD");
  BOOST_TEST(v.at("c").as_string() == "\xF0\x9F\x98\x80");  // a valid pair stays a pair
  BOOST_TEST(v.at("d").as_string() == "\\ud800");           // an escaped backslash is not an escape
}

BOOST_AUTO_TEST_CASE(text_without_surrogates_is_untouched) {
  boost::system::error_code ec;
  bool replaced = true;
  support::parse_json(R"({"a":"\u0041\n"})", ec, &replaced);
  BOOST_TEST(!ec);
  BOOST_TEST(!replaced);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_a_parse_error) {
  boost::system::error_code ec;
  support::parse_json("{\"a\":\"\xC3\x28\"}", ec);
  BOOST_TEST(static_cast<bool>(ec));
}

BOOST_AUTO_TEST_CASE(serialisation_matches_json_stringify) {
  json::value v = json::object{{"b", "<\x01/\x7F\xE2\x80\xA8"}, {"a", 1}};
  BOOST_TEST(support::to_json_text(v) == "{\"b\":\"<\\u0001/\x7F\xE2\x80\xA8\",\"a\":1}");
}

BOOST_AUTO_TEST_SUITE_END()

#include "handlers/text_frames.hpp"
#include "protocol/methods.hpp"

BOOST_AUTO_TEST_SUITE(text_chunk_frames)

// The direct text-chunk frames must be the bytes the general path writes, for every kind of text.
BOOST_AUTO_TEST_CASE(identical_to_the_general_path) {
  using namespace acp::protocol;
  const std::string id = "sess \"quoted\" dsh-text-placeholder-7f3a";
  acp::handlers::TextChunkFrames frames(id);
  std::string all_bytes;
  for (int c = 1; c < 256; ++c) all_bytes += static_cast<char>(c);
  const std::vector<std::string> texts{"", "hello", "quote \" backslash \\ newline \n tab \t", "naïve ✓ 😀",
                                       std::string(100000, 'x') + "\x01\x1f", all_bytes,
                                       "dsh-text-placeholder-7f3a"};
  for (const auto& text : texts) {
    TextContent block{text, std::nullopt, std::nullopt};
    for (SessionUpdate u : {SessionUpdate{UserMessageChunk{block, {}, {}}}, SessionUpdate{AgentMessageChunk{block, {}, {}}},
                            SessionUpdate{AgentThoughtChunk{block, {}, {}}}}) {
      auto fast = frames.frame(u);
      BOOST_REQUIRE(fast);
      SessionNotification note{id, u, std::nullopt};
      BOOST_TEST(*fast == acp::jsonrpc::serialize_notification(methods::session_update, acp::wire::encode(note)));
    }
  }
}

BOOST_AUTO_TEST_CASE(other_updates_take_the_general_path) {
  using namespace acp::protocol;
  acp::handlers::TextChunkFrames frames("s");
  BOOST_TEST(!frames.frame(SessionUpdate{Plan{}}));
  // A messageId is written by the fast path too (every chunk has one), as the general path writes it.
  const SessionUpdate with_id{AgentMessageChunk{TextContent{"t", std::nullopt, std::nullopt}, std::string("m1"), {}}};
  BOOST_TEST(*frames.frame(with_id) == acp::jsonrpc::serialize_notification(
                                           methods::session_update, acp::wire::encode(SessionNotification{"s", with_id, std::nullopt})));
  BOOST_TEST(!frames.frame(SessionUpdate{AgentMessageChunk{TextContent{"t", std::nullopt, boost::json::object{{"k", 1}}}, {}, {}}}));
  BOOST_TEST(!frames.frame(SessionUpdate{SessionInfoUpdate{}}));
}

BOOST_AUTO_TEST_SUITE_END()
