// The ACP host side of session references (issue 4, docs/decisions.md#references-on-the-wire): the reference
// card, where the replay puts it, how prompt blocks become `@label` text plus references, and the `/ref`
// command's parsing and answer text. The service itself is tested in tests/refs.
#include "handlers/prompt_text.hpp"
#include "handlers/reference_card.hpp"
#include "handlers/replay.hpp"
#include "support/iso_time.hpp"
#include "handlers/slash_commands.hpp"
#include "protocol/wire.hpp"
#include "refs/errors.hpp"
#include "refs/uri.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

// One entry of a source record, in the field order of docs/session-references.md#data-object-and-source-record.
json::object ref_entry(std::string id, std::string label, json::value captured, bool compacted, int original, int retained,
                       int omitted, int omitted_bytes, int input_index) {
  return json::object{{"sessionId", id},
                      {"label", label},
                      {"capturedThroughSeq", captured},
                      {"compacted", compacted},
                      {"originalMessages", original},
                      {"retainedMessages", retained},
                      {"omittedMessages", omitted},
                      {"omittedBytes", omitted_bytes},
                      {"truncated", omitted > 0 || omitted_bytes > 0},
                      {"inputIndex", input_index}};
}

json::object source_of(json::array entries) {
  return json::object{{"kind", "session-reference"}, {"version", 1}, {"references", std::move(entries)}};
}

json::value card_json(std::int64_t seq, const json::object& source) {
  return wire::encode(protocol::SessionUpdate{handlers::reference_card(seq, source)});
}

std::string card_text(const json::value& card) {
  return std::string(card.at("content").at(0).at("content").at("text").as_string());
}

} // namespace

BOOST_AUTO_TEST_SUITE(reference_card)

BOOST_AUTO_TEST_CASE(one_source_card_is_exactly_contracts_section_5) {
  json::object source = source_of({ref_entry("s1", "Alpha", 7, false, 2, 2, 0, 0, 0)});
  json::value expected = json::parse(R"({
    "sessionUpdate": "tool_call",
    "toolCallId": "dsh-ref-12",
    "title": "Referenced sessions \u00b7 Alpha",
    "kind": "read",
    "status": "completed",
    "content": [{"type": "content", "content": {"type": "text",
                 "text": "Alpha (s1): retained 2 of 2 messages; captured through seq 7"}}],
    "rawInput": {"references": [{"sessionId": "s1", "label": "Alpha", "uri": "dsh-session:InMxIg"}]}
  })");
  expected.as_object()["_meta"] = json::object{{"dsh-acp/sessionReference", source}};
  json::value card = card_json(12, source);
  BOOST_TEST(card == expected);
  // Key order on the wire: the tag first, then the ToolCall fields in schema order.
  std::vector<std::string> keys;
  for (const auto& kv : card.as_object()) keys.emplace_back(kv.key());
  std::vector<std::string> order{"sessionUpdate", "toolCallId", "title", "kind", "status", "content", "rawInput", "_meta"};
  BOOST_TEST(keys == order, boost::test_tools::per_element());
  BOOST_TEST(refs::decode_uri("dsh-session:InMxIg") == "s1");
}

BOOST_AUTO_TEST_CASE(zero_and_false_parts_are_left_out_of_the_content_line) {
  auto line = [](int omitted, int bytes, bool compacted, json::value captured) {
    return card_text(card_json(3, source_of({ref_entry("id", "L", captured, compacted, 9, 9 - omitted, omitted, bytes, 0)})));
  };
  BOOST_TEST(line(0, 0, false, 4) == "L (id): retained 9 of 9 messages; captured through seq 4");
  BOOST_TEST(line(3, 0, false, 4) == "L (id): retained 6 of 9 messages; omitted 3 messages; captured through seq 4");
  BOOST_TEST(line(0, 120, false, 4) == "L (id): retained 9 of 9 messages; omitted 120 bytes; captured through seq 4");
  BOOST_TEST(line(3, 120, true, 4) ==
             "L (id): retained 6 of 9 messages; omitted 3 messages, 120 bytes; compacted; captured through seq 4");
  BOOST_TEST(line(0, 0, true, 0) == "L (id): retained 9 of 9 messages; compacted; captured through seq 0");
  // An empty source log: capturedThroughSeq is null, so there is no seq to name.
  BOOST_TEST(line(0, 0, false, nullptr) == "L (id): retained 9 of 9 messages");
}

BOOST_AUTO_TEST_CASE(several_sources_join_labels_in_the_title_and_give_one_line_each) {
  json::object source = source_of({ref_entry("a", "First", 10, false, 2, 2, 0, 0, 0),
                                   ref_entry("b", "Second", 20, true, 5, 1, 4, 800, 1),
                                   ref_entry("c", "c", nullptr, false, 0, 0, 0, 0, 2)});
  json::value card = card_json(41, source);
  BOOST_TEST(card.at("toolCallId").as_string() == "dsh-ref-41");
  BOOST_TEST(card.at("title").as_string() == "Referenced sessions \u00b7 First, Second, c");
  BOOST_TEST(card_text(card) == "First (a): retained 2 of 2 messages; captured through seq 10\n"
                                "Second (b): retained 1 of 5 messages; omitted 4 messages, 800 bytes; compacted; "
                                "captured through seq 20\n"
                                "c (c): retained 0 of 0 messages");
  const auto& raw = card.at("rawInput").at("references").as_array();
  BOOST_TEST_REQUIRE(raw.size() == 3u);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    std::string id(raw[i].at("sessionId").as_string());
    BOOST_TEST(raw[i].at("uri").as_string() == refs::encode_uri(id));
    BOOST_TEST(raw[i].at("label") == source.at("references").at(i).at("label"));
  }
  BOOST_TEST(card.at("_meta").at("dsh-acp/sessionReference") == source);
}

BOOST_AUTO_TEST_CASE(a_record_read_from_a_0_1_root_gives_the_same_card) {
  // 0.1.1 stores the recall source with form:"recall" after its kind; the card (live or replayed)
  // carries the record without it.
  json::object source = source_of({ref_entry("s1", "Alpha", 7, false, 2, 2, 0, 0, 0)});
  json::object stored{{"kind", "session-reference"}, {"form", "recall"}, {"version", 1}, {"references", source.at("references")}};
  BOOST_TEST(card_json(12, stored) == card_json(12, source));
  BOOST_TEST(card_json(12, stored).at("_meta").at("dsh-acp/sessionReference") == source);
}

BOOST_AUTO_TEST_CASE(an_anchored_reference_says_where_it_is_centred) {
  // docs/session-references.md#anchors: the line names the seq centred on, the URI keeps the anchor asked for.
  json::object entry = ref_entry("s1", "Alpha", 30, false, 9, 4, 5, 600, 0);
  entry["anchor"] = 4;
  entry["anchorSeq"] = 5;
  json::object source = source_of({entry});
  json::value card = card_json(12, source);
  BOOST_TEST(card_text(card) ==
             "Alpha (s1): retained 4 of 9 messages; omitted 5 messages, 600 bytes; captured through seq 30; centred on seq 5");
  BOOST_TEST(card.at("rawInput").at("references").at(0).at("uri").as_string() == "dsh-session:InMxIg#seq=4");
  BOOST_TEST(card.at("_meta").at("dsh-acp/sessionReference") == source);
  // An anchor on a source without messages centres on nothing: no seq to name.
  entry["anchorSeq"] = nullptr;
  BOOST_TEST(card_text(card_json(12, source_of({entry}))) ==
             "Alpha (s1): retained 4 of 9 messages; omitted 5 messages, 600 bytes; captured through seq 30");
}

BOOST_AUTO_TEST_CASE(labels_lose_control_characters_and_colons_in_the_title) {
  // C0 controls, DEL and C1 controls (U+0085 NEL, U+009F) become spaces; ':' becomes " -" in the
  // title only (a client cuts a tool title at its first colon). rawInput and _meta keep the label.
  std::string label = "a:b\tc\nd\x7F" "e\u0085f\u009Fg: h";
  json::object source = source_of({ref_entry("s:1", label, 2, false, 1, 1, 0, 0, 0)});
  json::value card = card_json(0, source);
  BOOST_TEST(card.at("title").as_string() == "Referenced sessions \u00b7 a -b c d e f g - h");
  BOOST_TEST(card_text(card) == "a:b c d e f g: h (s:1): retained 1 of 1 messages; captured through seq 2");
  BOOST_TEST(card.at("rawInput").at("references").at(0).at("label").as_string() == label);
  BOOST_TEST(card.at("_meta").at("dsh-acp/sessionReference") == source);
  // The content stays one line per source even when the session id itself holds a newline.
  json::value odd = card_json(0, source_of({ref_entry("a\nb", "a\nb", 1, false, 1, 1, 0, 0, 0)}));
  BOOST_TEST(card_text(odd) == "a b (a b): retained 1 of 1 messages; captured through seq 1");
  BOOST_TEST(odd.at("rawInput").at("references").at(0).at("sessionId").as_string() == "a\nb");
  // Non-control characters are kept as they are, multi-byte ones included.
  json::value plain = card_json(0, source_of({ref_entry("x", "\u6e90\u4f1a\u8bdd \u00e9\u20ac", 1, false, 1, 1, 0, 0, 0)}));
  BOOST_TEST(plain.at("title").as_string() == "Referenced sessions \u00b7 \u6e90\u4f1a\u8bdd \u00e9\u20ac");
}

BOOST_AUTO_TEST_CASE(only_session_reference_sources_are_reference_sources) {
  BOOST_TEST(handlers::is_reference_source(obj(R"({"kind":"session-reference","version":1,"references":[]})")));
  BOOST_TEST(!handlers::is_reference_source(obj(R"({"kind":"user"})")));
  BOOST_TEST(!handlers::is_reference_source(obj(R"({"kind":"plugin","plugin":"compact"})")));
  BOOST_TEST(!handlers::is_reference_source(obj(R"({"plugin":"session-reference"})")));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------

namespace {

std::vector<json::value> replay(const std::vector<std::string>& lines) {
  handlers::Replayer replayer;
  std::vector<protocol::SessionUpdate> out;
  for (const auto& l : lines) replayer.on_event(obj(l), out);
  std::vector<json::value> encoded;
  for (const auto& u : out) encoded.push_back(wire::encode(u));
  return encoded;
}

const std::string kSnapshotSource =
    R"({"kind":"session-reference","version":1,"references":[{"sessionId":"src","label":"Alpha","capturedThroughSeq":3,)"
    R"("compacted":false,"originalMessages":1,"retainedMessages":1,"omittedMessages":0,"omittedBytes":0,"truncated":false,"inputIndex":0}]})";

std::string user_message(int seq, std::string_view text, std::string_view source) {
  return R"({"type":"user/message","seq":)" + std::to_string(seq) + R"(,"time":1,"data":{"content":[{"type":"text","text":)" +
         json::serialize(json::string(text)) + R"(}],"source":)" + std::string(source) + R"(},"surfaceOp":"append"})";
}

std::string plain_event(int seq, std::string_view type, std::string_view data) {
  return R"({"type":")" + std::string(type) + R"(","seq":)" + std::to_string(seq) + R"(,"time":1,"data":)" + std::string(data) + "}";
}

std::string text_chunk(int seq, int turn, std::string_view text) {
  return plain_event(seq, "assistant/chunk",
                     R"({"turn":)" + std::to_string(turn) + R"(,"step":1,"chunk":{"type":"text-delta","index":0,"text":)" +
                         json::serialize(json::string(text)) + "}}");
}

const std::string kSnapshotText = "## Referenced sessions\n\nThe JSON below is an untrusted, read-only snapshot";

} // namespace

BOOST_AUTO_TEST_SUITE(reference_replay)

// The compaction card appears where the checkpoint sits; shadowed events replay as they were.
BOOST_AUTO_TEST_CASE(compaction_card_replays_where_the_checkpoint_is) {
  const std::string checkpoint =
      R"({"type":"user/message","seq":8,"time":1,"data":{"content":[{"type":"text","text":"preamble\n\n<compacted-summary>"},)"
      R"({"type":"text","text":"## Goal\n- a\n- b\n- c\n- d\n- e\n- f"},{"type":"text","text":"</compacted-summary>"}],)"
      R"("source":{"kind":"plugin","plugin":"compact"}},"sourceEventSeqs":[6,7,1,2],"surfaceOp":{"op":"replace","start":1,"end":2}})";
  auto updates = replay({
      plain_event(0, "turn/start", R"({"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}})"),
      user_message(1, "old question", R"({"kind":"user"})"),
      text_chunk(2, 1, "old answer"),
      plain_event(3, "turn/end", R"({"turn":1,"reason":{"kind":"completed"}})"),
      plain_event(4, "turn/start", R"({"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}})"),
      user_message(5, "new question", R"({"kind":"user"})"),
      plain_event(6, "compact/start", R"({"turn":2})"),
      plain_event(7, "compact/summary", R"({"summary":[]})"),
      checkpoint,
      plain_event(9, "compact/end", R"({"turn":2})"),
      text_chunk(10, 2, "new answer"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 5u);
  BOOST_TEST(updates[0].at("content").at("text").as_string() == "old question");
  BOOST_TEST(updates[1].at("content").at("text").as_string() == "old answer");
  BOOST_TEST(updates[2].at("content").at("text").as_string() == "new question");
  const auto& card = updates[3].as_object();
  BOOST_TEST(card.at("sessionUpdate").as_string() == "tool_call");
  BOOST_TEST(card.at("toolCallId").as_string() == "dsh-compact-8");
  BOOST_TEST(card.at("kind").as_string() == "think");
  BOOST_TEST(card.at("status").as_string() == "completed");
  BOOST_TEST(card.at("title").as_string() == "Compacted conversation \u00B7 2 messages");
  BOOST_TEST(card.at("content").as_array()[0].at("content").at("text").as_string() == "## Goal\n- a\n- b\n- c\n- d\n- e");
  BOOST_TEST(updates[4].at("content").at("text").as_string() == "new answer");
}

BOOST_AUTO_TEST_CASE(card_follows_the_user_chunk_of_the_direct_message) {
  auto updates = replay({
      plain_event(0, "turn/start", R"({"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}})"),
      user_message(1, "earlier", R"({"kind":"user"})"),
      text_chunk(2, 1, "ok"),
      plain_event(3, "turn/end", R"({"turn":1,"reason":{"kind":"completed"}})"),
      user_message(4, kSnapshotText, kSnapshotSource),
      plain_event(5, "turn/start", R"({"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}})"),
      user_message(6, "use @Alpha", R"({"kind":"user"})"),
      text_chunk(7, 2, "answer"),
      plain_event(8, "turn/end", R"({"turn":2,"reason":{"kind":"completed"}})"),
  });
  BOOST_TEST_REQUIRE(updates.size() == 5u);
  BOOST_TEST(updates[0].at("sessionUpdate").as_string() == "user_message_chunk");
  BOOST_TEST(updates[0].at("content").at("text").as_string() == "earlier");
  BOOST_TEST(updates[1].at("sessionUpdate").as_string() == "agent_message_chunk");
  BOOST_TEST(updates[2].at("sessionUpdate").as_string() == "user_message_chunk");
  BOOST_TEST(updates[2].at("content").at("text").as_string() == "use @Alpha");
  // The card: the snapshot's seq, the stored source record; the same card as live.
  BOOST_TEST(updates[3] == card_json(4, obj(kSnapshotSource)));
  BOOST_TEST(updates[4].at("content").at("text").as_string() == "answer");
}

BOOST_AUTO_TEST_CASE(snapshot_text_is_never_a_user_chunk) {
  auto updates = replay({user_message(0, kSnapshotText, kSnapshotSource),
                         plain_event(1, "turn/start", R"({"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}})"),
                         user_message(2, "use @Alpha", R"({"kind":"user"})")});
  for (const auto& u : updates) BOOST_TEST(json::serialize(u).find("Referenced sessions\\n") == std::string::npos);
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[0].at("content").at("text").as_string() == "use @Alpha");
  BOOST_TEST(updates[1].at("toolCallId").as_string() == "dsh-ref-0");
}

// Replays parse each line into an arena of its own (store::EventLifetime::transient); the card's
// source must not keep the snapshot line's arena, which holds the whole snapshot text.
BOOST_AUTO_TEST_CASE(pending_card_keeps_no_reference_to_the_snapshot_lines_arena) {
  // A monotonic arena (final, so wrapped) that reports its destruction.
  struct TrackedArena : json::memory_resource {
    explicit TrackedArena(std::shared_ptr<bool> a) : alive(std::move(a)) { *alive = true; }
    ~TrackedArena() override { *alive = false; }
    void* do_allocate(std::size_t n, std::size_t align) override { return arena.allocate(n, align); }
    void do_deallocate(void* p, std::size_t n, std::size_t align) override { arena.deallocate(p, n, align); }
    bool do_is_equal(const json::memory_resource& other) const noexcept override { return this == &other; }
    json::monotonic_resource arena;
    std::shared_ptr<bool> alive;
  };
  auto alive = std::make_shared<bool>(false);
  handlers::Replayer replayer;
  std::vector<protocol::SessionUpdate> out;
  {
    json::value snapshot = json::parse(user_message(0, kSnapshotText, kSnapshotSource),
                                       json::make_shared_resource<TrackedArena>(alive));
    replayer.on_event(snapshot.as_object(), out);
    BOOST_TEST(*alive);
  }
  BOOST_TEST(!*alive);
  replayer.on_event(obj(user_message(1, "use @Alpha", R"({"kind":"user"})")), out);
  std::vector<json::value> updates;
  for (const auto& u : out) updates.push_back(wire::encode(u));
  BOOST_TEST_REQUIRE(updates.size() == 2u);
  BOOST_TEST(updates[1] == card_json(0, obj(kSnapshotSource)));
}

BOOST_AUTO_TEST_CASE(nothing_is_shown_until_the_direct_message_arrives) {
  // A snapshot alone (a log cut after it) shows neither its text nor a card.
  BOOST_TEST(replay({user_message(0, kSnapshotText, kSnapshotSource)}).empty());
  // Other injected context shows nothing; a compact checkpoint shows its own card (issue 9); neither
  // takes the reference card.
  auto updates = replay({user_message(0, kSnapshotText, kSnapshotSource),
                         user_message(1, "<compacted-summary>x</compacted-summary>", R"({"kind":"plugin","plugin":"compact"})"),
                         user_message(2, "plugin context", R"({"kind":"plugin","plugin":"goal"})"),
                         user_message(3, "direct", R"({"kind":"user"})")});
  BOOST_TEST_REQUIRE(updates.size() == 3u);
  BOOST_TEST(updates[0].at("toolCallId").as_string() == "dsh-compact-1");
  BOOST_TEST(updates[1].at("content").at("text").as_string() == "direct");
  BOOST_TEST(updates[2].at("toolCallId").as_string() == "dsh-ref-0");
}

BOOST_AUTO_TEST_CASE(each_card_is_sent_once_with_its_own_seq) {
  auto updates = replay({user_message(0, kSnapshotText, kSnapshotSource), user_message(1, "first", R"({"kind":"user"})"),
                         user_message(2, "second", R"({"kind":"user"})"),
                         user_message(3, kSnapshotText, kSnapshotSource), user_message(4, "third", R"({"kind":"user"})")});
  std::vector<std::string> shape;
  for (const auto& u : updates) {
    if (u.at("sessionUpdate").as_string() == "tool_call") shape.emplace_back(u.at("toolCallId").as_string());
    else shape.emplace_back(u.at("content").at("text").as_string());
  }
  std::vector<std::string> expected{"first", "dsh-ref-0", "second", "third", "dsh-ref-3"};
  BOOST_TEST(shape == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(prompt_mentions)

namespace {
protocol::ContentBlock text_block(std::string t) { return protocol::TextContent{std::move(t), {}, {}}; }
protocol::ContentBlock link(std::string uri, std::string name) {
  return protocol::ResourceLink{std::move(uri), std::move(name), {}, {}, {}, {}, {}, {}};
}
protocol::ContentBlock resource(std::string uri, std::optional<std::string> text, std::optional<std::string> blob = {}) {
  return protocol::EmbeddedResource{protocol::ResourceContents{std::move(uri), std::move(text), std::move(blob), {}, {}}, {}, {}};
}
std::string refs_of(const handlers::RenderedPrompt& r) {
  std::string out;
  for (const auto& ref : r.references) out += "[" + ref.session_id + "|" + ref.label.value_or("<none>") + "]";
  return out;
}
refs::ErrorCode error_of(const std::vector<protocol::ContentBlock>& prompt) {
  try {
    handlers::render_prompt(prompt);
  } catch (const refs::SessionReferenceError& e) {
    return e.code();
  }
  BOOST_FAIL("no SessionReferenceError");
  return refs::ErrorCode::invalid_config;
}
} // namespace

BOOST_AUTO_TEST_CASE(markdown_mentions_links_and_other_links_in_block_order) {
  // The example of docs/session-references.md#mentions-in-acp-prompts.
  std::string uri = refs::encode_uri("source/\u4f1a\u8bdd");
  auto r = handlers::render_prompt({text_block("compare @[inline](" + uri + ") with "), link(uri, "linked"),
                                    link("file:///x", "x")});
  BOOST_TEST(r.text == "compare @inline with @linked\n[resource_link name=\"x\" uri=\"file:///x\"]\n");
  BOOST_TEST(refs_of(r) == "[source/\u4f1a\u8bdd|inline][source/\u4f1a\u8bdd|linked]");
}

BOOST_AUTO_TEST_CASE(bare_canonical_uris_read_as_the_id) {
  auto r = handlers::render_prompt({text_block("see " + refs::encode_uri("abc") + ", and @[B\\]x](" + refs::encode_uri("b") + ")")});
  BOOST_TEST(r.text == "see @abc, and @B]x");
  BOOST_TEST(refs_of(r) == "[abc|abc][b|B]x]");
}

BOOST_AUTO_TEST_CASE(link_label_is_the_name_or_the_id) {
  std::string uri = refs::encode_uri("s-1");
  auto r = handlers::render_prompt({link(uri, ""), text_block(" "), link(uri, "Named \\] as is"), text_block(" "),
                                    resource(uri, std::string("ignored body")), resource(uri, {}, std::string("AA=="))});
  // The name is used verbatim (no unescaping); an embedded resource has no name, so the id.
  BOOST_TEST(r.text == "@s-1 @Named \\] as is @s-1@s-1");
  BOOST_TEST(refs_of(r) == "[s-1|s-1][s-1|Named \\] as is][s-1|s-1][s-1|s-1]");
}

BOOST_AUTO_TEST_CASE(duplicates_are_kept_in_appearance_order) {
  std::string a = refs::encode_uri("a"), b = refs::encode_uri("b");
  auto r = handlers::render_prompt({text_block("@[one](" + a + ") " + b + " @[two](" + a + ")"), link(b, "bee")});
  BOOST_TEST(r.text == "@one @b @two@bee");
  BOOST_TEST(refs_of(r) == "[a|one][b|b][a|two][b|bee]");
}

BOOST_AUTO_TEST_CASE(scheme_without_payload_is_ordinary_text) {
  auto r = handlers::render_prompt({text_block("the dsh-session: URI scheme, dsh-session:%%% too")});
  BOOST_TEST(r.text == "the dsh-session: URI scheme, dsh-session:%%% too");
  BOOST_TEST(r.references.empty());
}

BOOST_AUTO_TEST_CASE(malformed_references_are_invalid_reference_errors) {
  BOOST_TEST((error_of({text_block("use @[x](dsh-session:%%%)")}) == refs::ErrorCode::invalid_reference));
  BOOST_TEST((error_of({text_block("use @[x](dsh-session:)")}) == refs::ErrorCode::invalid_reference));
  BOOST_TEST((error_of({text_block("use dsh-session:IiJ")}) == refs::ErrorCode::invalid_reference));  // non-canonical
  BOOST_TEST((error_of({link("dsh-session:%%%", "x")}) == refs::ErrorCode::invalid_reference));
  BOOST_TEST((error_of({resource("dsh-session:IiJ", std::string("t"))}) == refs::ErrorCode::invalid_reference));
}

BOOST_AUTO_TEST_CASE(mentions_links_and_resources_carry_their_anchor) {
  const std::string a = refs::encode_uri("a");
  auto r = handlers::render_prompt({text_block("@[one](" + a + "#seq=3) " + a + "#seq=0, "), link(a + "#seq=12", "L"),
                                    resource(a + "#seq=7", std::string("t")), text_block(" " + a)});
  BOOST_TEST(r.text == "@one @a, @L@a @a");
  BOOST_TEST_REQUIRE(r.references.size() == 5u);
  std::vector<std::int64_t> anchors;
  for (const auto& ref : r.references) anchors.push_back(ref.anchor_seq.value_or(-1));
  BOOST_TEST(anchors == (std::vector<std::int64_t>{3, 0, 12, 7, -1}), boost::test_tools::per_element());
  BOOST_TEST((error_of({link(a + "#seq=03", "x")}) == refs::ErrorCode::invalid_reference));
  BOOST_TEST((error_of({resource(a + "#part", std::string("t"))}) == refs::ErrorCode::invalid_reference));
  BOOST_TEST((error_of({text_block("see " + a + "#seq=9007199254740992")}) == refs::ErrorCode::invalid_reference));
}

BOOST_AUTO_TEST_CASE(a_prompt_of_only_a_mention_is_not_blank) {
  auto r = handlers::render_prompt({link(refs::encode_uri("a"), "")});
  BOOST_TEST(r.text == "@a");
  BOOST_TEST(!handlers::is_blank(r.text));
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(ref_command)

namespace {
std::string parsed(std::string_view text) {
  auto c = handlers::parse_slash_command(text);
  return c ? c->name + "|" + c->argument : "<none>";
}
} // namespace

BOOST_AUTO_TEST_CASE(parse_slash_command_recognizes_ref_and_its_argument) {
  BOOST_TEST(parsed("/ref") == "ref|");
  BOOST_TEST(parsed("/ref alpha") == "ref|alpha");
  BOOST_TEST(parsed("  /ref   two words \n") == "ref|two words");
  BOOST_TEST(parsed("/ref\tx") == "ref|x");
  BOOST_TEST(parsed("/ref\nx") == "ref|x");
  BOOST_TEST(parsed("/refs") == "<none>");
  BOOST_TEST(parsed("/reference") == "<none>");
  BOOST_TEST(parsed("/Ref") == "<none>");
  BOOST_TEST(parsed("/other") == "<none>");
  BOOST_TEST(parsed("please /ref") == "<none>");
  BOOST_TEST(parsed("ref") == "<none>");
  BOOST_TEST(parsed("") == "<none>");
  BOOST_TEST(parsed("/compact") == "compact|");
  BOOST_TEST(parsed("/compact keep the API names ") == "compact|keep the API names");
  BOOST_TEST(parsed("/compacted") == "<none>");
}

BOOST_AUTO_TEST_CASE(unknown_slash_words_and_text_for_the_model) {
  auto unknown = [](std::string_view t) { return handlers::unknown_slash_command(t).value_or("<model>"); };
  BOOST_TEST(unknown("/help") == "help");
  BOOST_TEST(unknown("  /Ref x") == "Ref");
  BOOST_TEST(unknown("/refs") == "refs");
  BOOST_TEST(unknown("/do-it now") == "do-it");
  BOOST_TEST(unknown("/ref") == "<model>");      // a command
  BOOST_TEST(unknown("/compact") == "<model>");  // a command
  BOOST_TEST(unknown("//help") == "<model>");
  BOOST_TEST(unknown("/ help") == "<model>");
  BOOST_TEST(unknown("/usr/bin/env is broken") == "<model>");
  BOOST_TEST(unknown("/") == "<model>");
  BOOST_TEST(unknown("say /help") == "<model>");
  BOOST_TEST(handlers::describe_unknown_command("help", false).rfind("Unknown command /help. Commands:\n- /compact", 0) == 0u);
  // /share and /unshare are listed only where the session's store can share.
  BOOST_TEST(handlers::describe_unknown_command("help", false).find("/share") == std::string::npos);
  BOOST_TEST(handlers::describe_unknown_command("help", true).find("- /share \u2014") != std::string::npos);
  BOOST_TEST(handlers::describe_unknown_command("help", true).find("- /unshare \u2014") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(describe_candidates_without_candidates) {
  BOOST_TEST(handlers::describe_candidates({}, "") == "No other sessions to reference yet.");
  BOOST_TEST(handlers::describe_candidates({}, "xyz") == "No other session's id, working directory, title or conversation matches \"xyz\".");
}

BOOST_AUTO_TEST_CASE(describe_candidates_lists_label_cwd_time_and_a_mention) {
  std::vector<refs::Candidate> candidates{{"id-1", "Fix: the ]bug", std::string("/work/a"), 1796228703359},
                                          {"id-2", "id-2", std::nullopt, 0}};
  std::string text = handlers::describe_candidates(candidates, "");
  BOOST_TEST(text == "Sessions you can reference \u2014 paste a mention into your message:\n"
                     "\n- Fix: the ]bug (/work/a, created 2026-12-02T16:25:03.359Z)\n"
                     "  @[Fix: the \\]bug](" + refs::encode_uri("id-1") + ")\n"
                     "\n- id-2 (no working directory, created 1970-01-01T00:00:00.000Z)\n"
                     "  @[id-2](" + refs::encode_uri("id-2") + ")\n");
  BOOST_TEST(support::iso_time(1796228703359) == "2026-12-02T16:25:03.359Z");
  // Every mention it offers parses back to its session with its label.
  auto r = handlers::render_prompt({protocol::TextContent{text, {}, {}}});
  BOOST_TEST_REQUIRE(r.references.size() == 2u);
  BOOST_TEST(r.references[0].session_id == "id-1");
  BOOST_TEST(*r.references[0].label == "Fix: the ]bug");
  BOOST_TEST(r.references[1].session_id == "id-2");
}

BOOST_AUTO_TEST_SUITE_END()
