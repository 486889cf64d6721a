// The 32 KiB frame promise (docs/decisions.md#update-frames) through the handlers that write session/update frames:
// live text deltas (session/prompt) and replay (session/load), for text whose JSON escaping is many
// times its size. Plus the small session/list and session/cancel rules.
#include "handler_fixture.hpp"

#include "handlers/handlers.hpp"
#include "handlers/message_id.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/text_frames.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/wire.hpp"
#include "refs/json_string.hpp"
#include "support/utf8.hpp"

#include <boost/test/unit_test.hpp>

#include <set>

using namespace engine_fixture;
using acp::handlers::kMaxNotificationBytes;

namespace {

std::string repeat(std::string_view unit, std::size_t n) {
  std::string out;
  out.reserve(unit.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += unit;
  return out;
}

// Texts whose escaping makes them up to six times larger, each well over one frame.
std::vector<std::pair<std::string, std::string>> hostile_texts() {
  std::string controls;
  for (int i = 0; i < 40000; ++i) controls += static_cast<char>(i % 32);  // \u0000 … \u001f, \n, \t …
  return {
      {"controls", controls},
      {"escapes", repeat("\x1b", 30000)},
      {"quotes", repeat("\"", 40000)},
      {"backslashes", repeat("\\", 40000)},
      {"4-byte characters", repeat("\xF0\x9F\x98\x80", 20000)},
      {"mixed", repeat("\x1b[31m\"red\\\"\x1b[0m \xF0\x9F\x98\x80\xE2\x82\xAC\t\x01", 4000)},
  };
}

// The kind of a session/update frame, and its text when it is a text chunk.
std::pair<std::string, std::string> chunk_of(const std::string& frame) {
  json::value v = json::parse(frame);
  const auto& update = v.at("params").at("update").as_object();
  std::string kind(update.at("sessionUpdate").as_string());
  if (kind != "user_message_chunk" && kind != "agent_message_chunk" && kind != "agent_thought_chunk") return {kind, ""};
  return {kind, std::string(update.at("content").at("text").as_string())};
}

} // namespace

BOOST_AUTO_TEST_SUITE(text_chunks)

BOOST_AUTO_TEST_CASE(json_pieces_fit_their_budget_and_join_to_the_text) {
  for (const auto& [name, whole] : hostile_texts()) {
    for (std::size_t budget : {6u, 7u, 100u, 30000u}) {
      // Small budgets on a part of the text: tens of thousands of pieces prove no more.
      const std::string text = budget < 1000 ? whole.substr(0, support::utf8_floor(whole, 3000)) : whole;
      std::string joined;
      for (std::string_view rest = text; !rest.empty();) {
        std::string_view piece = handlers::first_json_piece(rest, budget);
        BOOST_TEST_REQUIRE(!piece.empty());
        BOOST_TEST(refs::json_string_size(piece) - 2 <= budget, name << " at budget " << budget);
        // The longest such piece: one more code point would not fit.
        if (piece.size() < rest.size()) {
          std::string_view longer = rest.substr(0, support::utf8_ceil(rest, piece.size() + 1));
          BOOST_TEST(refs::json_string_size(longer) - 2 > budget, name << " at budget " << budget);
        }
        BOOST_TEST(support::valid_utf8(piece), name);
        joined += piece;
        rest.remove_prefix(piece.size());
      }
      BOOST_TEST(joined == text, name);
    }
  }
  // The measure is the escaping frames get (Boost.JSON's serializer).
  std::string ascii;
  for (int c = 0; c < 128; ++c) ascii += static_cast<char>(c);
  ascii += "\xE2\x82\xAC\xF0\x9F\x98\x80";
  BOOST_TEST(refs::json_string_size(ascii) == json::serialize(json::value(ascii)).size());
  BOOST_TEST(refs::json_escaped_prefix(ascii, 1000) == ascii.size());
  BOOST_TEST(refs::json_escaped_prefix(ascii, 0) == 0u);
  BOOST_TEST(refs::json_escaped_prefix(ascii, 11) == 1u);  // \u0000 fits, \u0001 does not
  BOOST_TEST(handlers::first_json_piece("", 10).empty());
  // Below one code point's escaping, a piece is still one code point (so splitting ends).
  BOOST_TEST(handlers::first_json_piece("\x01\x02", 3) == "\x01");
  BOOST_TEST(handlers::first_json_piece("\xF0\x9F\x98\x80", 3) == "\xF0\x9F\x98\x80");
}

BOOST_AUTO_TEST_CASE(raw_pieces_end_on_code_point_boundaries) {
  const std::string euros = repeat("\xE2\x82\xAC", 10);
  BOOST_TEST(handlers::first_utf8_piece(euros, 16).size() == 15u);  // 16 would cut a € in two
  BOOST_TEST(handlers::first_utf8_piece(euros, 100) == euros);
  BOOST_TEST(handlers::first_utf8_piece(euros, 2) == "\xE2\x82\xAC");  // never empty
}

BOOST_AUTO_TEST_CASE(split_updates_fit_a_frame_and_join_to_the_text) {
  const std::string id = "session \"with\" \\ quotes \x1b";
  handlers::TextChunkFrames frames(id);
  const std::size_t budget = frames.text_budget();
  // The budget is exactly what a frame holds: a text of that escaped size, with a message id of ours
  // (36 bytes), fills a frame to the byte.
  BOOST_TEST(frames.frame_text(1, repeat("a", budget), handlers::message_id(id, "text/1/1/0"))->size() ==
             kMaxNotificationBytes);
  for (const auto& [name, text] : hostile_texts()) {
    const protocol::TextContent block{text, {}, {}};
    std::vector<protocol::SessionUpdate> updates{protocol::UserMessageChunk{block, {}, {}},
                                                 protocol::AgentThoughtChunk{block, {}, {}}};
    for (auto& update : updates) {
      std::string joined;
      std::size_t pieces = 0;
      handlers::for_each_split(update, budget, [&](protocol::SessionUpdate&& piece) {
        BOOST_TEST(piece.index() == update.index());
        std::string frame = *frames.frame(piece);
        BOOST_TEST(frame.size() <= kMaxNotificationBytes, name);
        joined += chunk_of(frame).second;
        ++pieces;
      });
      BOOST_TEST(pieces > 1u, name);
      BOOST_TEST(joined == text, name);
    }
  }
  // Other updates pass through whole.
  std::size_t calls = 0;
  handlers::for_each_split(protocol::Plan{}, budget, [&](protocol::SessionUpdate&& u) {
    BOOST_TEST(std::holds_alternative<protocol::Plan>(u));
    ++calls;
  });
  BOOST_TEST(calls == 1u);
}

// Live (session/prompt: the model's deltas) and replay (session/load: the log's user message and
// chunks) of the same turns: every frame within 32 KiB, the text whole.
BOOST_AUTO_TEST_CASE(live_and_replayed_frames_stay_within_32_kib) {
  Fixture f;
  auto texts = hostile_texts();
  std::string session_id;
  std::vector<std::string> prompts, answers;
  {
    auto p = f.process();
    Wire out(*p, f);
    session_id = f.run(handlers::session_new(out.ctx, protocol::NewSessionRequest{"/work/frames", {}, {}, {}})).sessionId;
    for (const auto& [name, text] : texts) {
      // The model answers with the text in one delta and with a short one around it.
      f.provider.answer = {"<", text, ">"};
      out.channel.frames.clear();
      prompts.push_back(name + ": " + text);  // visible text: a prompt of controls only is refused
      auto r = f.run(handlers::session_prompt(
          out.ctx, protocol::PromptRequest{session_id, {protocol::TextContent{prompts.back(), {}, {}}}, {}}));
      BOOST_TEST((r.stopReason == protocol::StopReason::end_turn));
      std::string answer;
      for (const auto& frame : out.channel.frames) {
        BOOST_TEST(frame.size() <= kMaxNotificationBytes, name << ": a live frame of " << frame.size() << " bytes");
        if (auto [kind, chunk] = chunk_of(frame); kind == "agent_message_chunk") answer += chunk;
      }
      BOOST_TEST(answer == "<" + text + ">", name);
      answers.push_back(answer);
    }
  }
  auto p = f.process();
  Wire out(*p, f);
  f.run(handlers::session_load(out.ctx, protocol::LoadSessionRequest{session_id, "/work/frames", {}, {}, {}}));
  // The user messages and answers in order: runs of user chunks, runs of agent chunks.
  std::vector<std::string> users, agents;
  std::string last_kind;
  for (const auto& frame : out.channel.frames) {
    BOOST_TEST(frame.size() <= kMaxNotificationBytes, "a replayed frame of " << frame.size() << " bytes");
    json::value v = json::parse(frame);
    const auto& update = v.at("params").at("update").as_object();
    const std::string kind(update.at("sessionUpdate").as_string());
    if (kind != "user_message_chunk" && kind != "agent_message_chunk") continue;
    auto& runs = kind == "user_message_chunk" ? users : agents;
    if (kind != last_kind) runs.emplace_back();
    runs.back() += update.at("content").at("text").as_string();
    last_kind = kind;
  }
  BOOST_REQUIRE_EQUAL(users.size(), texts.size());
  BOOST_REQUIRE_EQUAL(agents.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    BOOST_TEST(users[i] == prompts[i], texts[i].first);
    BOOST_TEST(agents[i] == answers[i], texts[i].first);
  }
}

// Cards, plans and titles cannot be split: one too large for a frame is shown cut, saying so.
BOOST_AUTO_TEST_CASE(cards_plans_and_titles_are_cut_to_fit_a_frame) {
  using namespace protocol;
  const std::string id = "s";
  auto frame_of = [&](SessionUpdate u) { return handlers::notification_frame(SessionNotification{id, std::move(u), {}}); };
  auto update_of = [](const std::string& frame) { return json::parse(frame).at("params").at("update").as_object(); };
  const std::string output = repeat("\x1b[31mred\x1b[0m \"q\" \\ \xF0\x9F\x98\x80", 8000);  // ~270 KB escaped

  // A small card is the general path's frame, untouched.
  ToolCallUpdate small;
  small.toolCallId = "t1";
  small.content = std::vector<ToolCallContent>{ToolContent{TextContent{"ok", {}, {}}}};
  small.rawOutput = json::value("ok");
  BOOST_TEST(frame_of(small) == jsonrpc::serialize_notification(acp::methods::session_update,
                                                                wire::encode(SessionNotification{id, small, {}})));

  // A result with a large output, in its content and its rawOutput: both cut on a code point, with
  // a note, each keeping a share of the frame (the rawOutput is sent on every result).
  auto check_cut = [&](const std::string& shown, const std::string& whole) {
    const std::size_t kept = shown.find("\n\u2026 (");
    BOOST_REQUIRE(kept != std::string::npos);
    BOOST_TEST(kept > 4096u);
    BOOST_TEST(whole.compare(0, kept, shown, 0, kept) == 0);
    BOOST_TEST(support::valid_utf8(shown));
    BOOST_TEST(shown.substr(kept) == "\n\u2026 (" + std::to_string(whole.size() - kept) + " more bytes not shown)");
  };
  for (bool ours : {false, true}) {
    ToolCallUpdate result;
    result.toolCallId = "t2";
    result.content = std::vector<ToolCallContent>{ToolContent{TextContent{"short", {}, {}}}, ToolContent{TextContent{output, {}, {}}}};
    // Ours comes bounded already: cut again, its note still counts every byte of the whole left out.
    result.rawOutput = ours ? json::value(json::object{{"output", handlers::bounded_text(output, 32 * 1024)}, {"isError", false}})
                            : json::value(output);
    std::string frame = frame_of(result);
    BOOST_TEST(frame.size() <= kMaxNotificationBytes);
    BOOST_TEST(frame.size() > kMaxNotificationBytes - 512);  // cut no more than needed
    auto update = update_of(frame);
    const auto& content = update.at("content").as_array();
    BOOST_TEST(content.at(0).at("content").at("text").as_string() == "short");
    check_cut(std::string(content.at(1).at("content").at("text").as_string()), output);
    BOOST_REQUIRE(update.contains("rawOutput"));
    const json::value& raw = update.at("rawOutput");
    check_cut(std::string(ours ? raw.at("output").as_string() : raw.as_string()), output);
    if (ours) BOOST_TEST(raw.at("isError") == json::value(false));
  }
  // A rawOutput of another shape cannot be cut: it is left out.
  ToolCallUpdate other;
  other.toolCallId = "t5";
  other.rawOutput = json::value(json::array{json::value(output)});
  BOOST_TEST(frame_of(other).size() <= kMaxNotificationBytes);
  BOOST_TEST(!update_of(frame_of(other)).contains("rawOutput"));
  std::string frame;

  // A call whose arguments are a large file: they are left out, the card stays.
  ToolCall call;
  call.toolCallId = "t3";
  call.title = "Write /a";
  call.rawInput = json::object{{"file_path", "/a"}, {"content", output}};
  frame = frame_of(call);
  BOOST_TEST(frame.size() <= kMaxNotificationBytes);
  BOOST_TEST(update_of(frame).at("title").as_string() == "Write /a");
  BOOST_TEST(!update_of(frame).contains("rawInput"));

  // A diff too large is not shown cut (that would show another change): a note replaces it.
  ToolCallUpdate edit;
  edit.toolCallId = "t4";
  edit.content = std::vector<ToolCallContent>{ToolDiff{"/a", std::string("old"), output}};
  frame = frame_of(edit);
  BOOST_TEST(frame.size() <= kMaxNotificationBytes);
  BOOST_TEST(update_of(frame).at("content").at(0).at("content").at("text").as_string() ==
             "The change to /a (" + std::to_string(output.size() + 3) + " bytes) is too large to show.");

  // A plan of long entries and a long title.
  Plan plan;
  for (int i = 0; i < 3; ++i) plan.entries.push_back(PlanEntry{output, PlanEntryPriority::medium, PlanEntryStatus::pending});
  BOOST_TEST(frame_of(plan).size() <= kMaxNotificationBytes);
  BOOST_TEST(update_of(frame_of(plan)).at("entries").as_array().size() == 3u);
  SessionInfoUpdate info;
  info.title = output;
  BOOST_TEST(frame_of(info).size() <= kMaxNotificationBytes);
}

// rawOutput's bound: whole when it fits, else cut on a code point with a note, within the bound.
BOOST_AUTO_TEST_CASE(bounded_text_cuts_on_a_code_point_with_a_note) {
  BOOST_TEST(handlers::bounded_text("short", 100) == "short");
  const std::string euros = repeat("\xE2\x82\xAC", 1000);  // 3,000 bytes
  BOOST_TEST(handlers::bounded_text(euros, 3000) == euros);
  const std::string cut = handlers::bounded_text(euros, 1000);
  BOOST_TEST(cut.size() <= 1000u);
  BOOST_TEST(support::valid_utf8(cut));
  const std::size_t kept = cut.find("\n\u2026 (");
  BOOST_REQUIRE(kept != std::string::npos);
  BOOST_TEST(kept % 3 == 0u);
  BOOST_TEST(kept >= 1000u - 64u - 2u);
  BOOST_TEST(cut.substr(kept) == "\n\u2026 (" + std::to_string(euros.size() - kept) + " more bytes not shown)");
}

// The template split the direct frames rest on; a frame without the placeholder has none (the
// writer then takes the general path instead of writing a broken frame).
// The fast frames of text chunks are the general path's, messageId included, message after message
// (a template is made again when the id changes); a chunk without an id gets a fresh one when
// split, the same for all its pieces.
BOOST_AUTO_TEST_CASE(fast_text_frames_carry_the_message_id) {
  const std::string session = "s-\"1\"";
  handlers::TextChunkFrames frames(session);
  for (const std::string place : {"text/1/1/0", "text/1/1/0", "reasoning/1/1/1", "user/7"}) {
    const std::string id = handlers::message_id(session, place);
    const protocol::TextContent block{"some \x1b text", {}, {}};
    for (protocol::SessionUpdate update : {protocol::SessionUpdate(protocol::UserMessageChunk{block, id, {}}),
                                           protocol::SessionUpdate(protocol::AgentMessageChunk{block, id, {}}),
                                           protocol::SessionUpdate(protocol::AgentThoughtChunk{block, id, {}})}) {
      const std::string general =
          handlers::notification_frame(protocol::SessionNotification{session, update, std::nullopt});
      BOOST_TEST(*frames.frame(update) == general);
      BOOST_TEST(json::parse(general).at("params").at("update").at("messageId").as_string() == id);
    }
  }
  std::set<std::string> ids;
  handlers::for_each_split(protocol::AgentMessageChunk{protocol::TextContent{repeat("x", 100000), {}, {}}, {}, {}},
                           frames.text_budget(),
                           [&](protocol::SessionUpdate&& piece) {
                             ids.insert(*std::get<protocol::AgentMessageChunk>(piece).messageId);
                           });
  BOOST_TEST(ids.size() == 1u);
  BOOST_TEST(ids.begin()->size() == 36u);
}

BOOST_AUTO_TEST_CASE(a_template_without_its_placeholder_is_none) {
  BOOST_TEST(!handlers::split_at_placeholder(R"({"text":"other"})", "ph"));
  BOOST_TEST(!handlers::split_at_placeholder(R"({"text":ph})", "ph"));  // not a JSON string
  auto parts = handlers::split_at_placeholder(R"({"id":"ph","text":"ph"})", "ph");
  BOOST_REQUIRE(parts);
  BOOST_TEST(parts->first == R"({"id":"ph","text":)");  // the last occurrence: the text's
  BOOST_TEST(parts->second == "}");
}

BOOST_AUTO_TEST_CASE(session_list_refuses_a_cwd_filter_that_new_refuses) {
  Fixture f;
  auto p = f.process();
  Wire out(*p, f);
  for (const char* cwd : {"relative", "/a\nb", "/a\rb"}) {
    try {
      f.run(handlers::session_list(out.ctx, protocol::ListSessionsRequest{std::string(cwd), {}, {}}));
      BOOST_FAIL("accepted " << cwd);
    } catch (const engine::InvalidInput& e) {
      BOOST_TEST(e.path() == "/cwd");
    }
  }
  try {
    f.run(handlers::session_list(out.ctx, protocol::ListSessionsRequest{std::string("/a\0b", 4), {}, {}}));
    BOOST_FAIL("accepted a NUL");
  } catch (const engine::InvalidInput& e) {
    BOOST_TEST(e.path() == "/cwd");
    BOOST_TEST(std::string(e.what()) == "must not contain NUL or line breaks");
  }
  BOOST_TEST(f.run(handlers::session_list(out.ctx, protocol::ListSessionsRequest{"/a b", {}, {}})).sessions.empty());
}

BOOST_AUTO_TEST_CASE(session_cancel_as_a_request_names_an_unknown_session) {
  Fixture f;
  auto p = f.process();
  Wire out(*p, f);
  try {
    f.run(handlers::session_cancel_request(out.ctx, protocol::CancelNotification{"nope", {}}));
    BOOST_FAIL("answered");
  } catch (const engine::SessionNotFound& e) {
    BOOST_TEST(e.session_id() == "nope");
  }
  f.run(handlers::session_cancel(out.ctx, protocol::CancelNotification{"nope", {}}));  // silent
  auto id = f.run(handlers::session_new(out.ctx, protocol::NewSessionRequest{"/work/c", {}, {}, {}})).sessionId;
  f.run(handlers::session_cancel_request(out.ctx, protocol::CancelNotification{id, {}}));  // nothing running: {}
}

BOOST_AUTO_TEST_SUITE_END()
