// References that point at a place in a session (`dsh-session:<payload>#seq=N`,
// docs/session-references.md#anchors): which URIs and mentions are accepted and which stay malformed
// as before, the first mention's anchor winning, centred retention (the anchored item first, then
// alternately newer and older neighbours, within the same budget), and the anchored streaming read
// (the anchor followed through compactions, a seq beyond the log, memory bounded by two passes)
// against an independent model of the same rules on random logs.
#include "test_support.hpp"

#include "refs/errors.hpp"
#include "refs/mentions.hpp"
#include "refs/retention.hpp"
#include "refs/serialization.hpp"
#include "refs/streaming_projection.hpp"
#include "refs/uri.hpp"

#include "store/fold.hpp"
#include "support/json_text.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <set>

using namespace acp::refs;
using namespace refs_test;

BOOST_TEST_DONT_PRINT_LOG_VALUE(std::optional<std::int64_t>)
BOOST_TEST_DONT_PRINT_LOG_VALUE(std::optional<std::size_t>)

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SessionReferenceError& e) {
    return std::string(e.code_name()) + ": " + e.what();
  }
  return "no error";
}

const std::string kA = "dsh-session:ImEi";  // the URI of session "a"
const std::string kInvalidA = "SESSION_REFERENCE_INVALID_REFERENCE: invalid session reference URI ";

// The data array of a prompt (the JSON between the framing tags).
json::array data_of(const std::string& prompt) {
  std::string_view body(prompt);
  body.remove_prefix(kPromptPrefix.size());
  body.remove_suffix(kPromptSuffix.size());
  return json::parse(body).as_array();
}

// The size the budget measures: the tag-safe JSON of one data object.
std::size_t measured(const json::value& data) {
  std::string text = json::serialize(data);
  return text.size() + 5 * static_cast<std::size_t>(std::count(text.begin(), text.end(), '<'));
}

std::vector<std::string> texts_of(const json::object& data) {
  std::vector<std::string> out;
  for (const auto& item : data.at("conversation").as_array()) out.emplace_back(item.at("text").as_string());
  return out;
}

// Seven messages m0..m6 (seqs 0..6), alternately user and assistant, each 10 bytes of text.
std::vector<json::object> seven() {
  std::vector<json::object> events;
  for (int i = 0; i < 7; ++i) {
    std::string text = "message-m" + std::to_string(i);
    events.push_back(i % 2 ? assistant(text, i) : user(text, i));
  }
  return events;
}

// render_context over one in-memory source, anchored at `anchor` (nullopt: no anchor).
AdditionalContext render(const std::vector<json::object>& events, std::optional<std::int64_t> anchor,
                         std::int64_t budget) {
  std::optional<std::int64_t> last;
  if (!events.empty()) last = std::int64_t(events.size()) - 1;
  std::vector<acp::store::SurfaceSnapshot> snaps{snapshot("s", std::nullopt, last, events)};
  return render_context({NormalizedReference{"s", "s", anchor}}, snaps, budget);
}

// The fixed part of seven()'s data object with an anchor on a one-digit seq:
// {"sessionId":"s","label":"s","cwd":null,"capturedThroughSeq":6,"anchorSeq":3,"conversation":[]}
constexpr std::int64_t kSevenFixed = 95;

} // namespace

BOOST_AUTO_TEST_SUITE(anchors)

BOOST_AUTO_TEST_CASE(uris_with_an_anchor) {
  BOOST_TEST(decode_reference_uri(kA).session_id == "a");
  BOOST_TEST(!decode_reference_uri(kA).anchor_seq.has_value());
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{7}, std::int64_t{1234567890}, kMaxAnchorSeq}) {
    const std::string uri = encode_reference_uri("a", n);
    BOOST_TEST(uri == kA + "#seq=" + std::to_string(n));
    ReferenceUri parsed = decode_reference_uri(uri);
    BOOST_TEST(parsed.session_id == "a");
    BOOST_TEST(parsed.anchor_seq == std::optional<std::int64_t>(n));
  }
  BOOST_TEST(encode_reference_uri("a", std::nullopt) == kA);
  // Only `#seq=N` with a canonical N is an anchor; every other fragment is malformed, as before.
  for (std::string fragment : {"#seq=9007199254740992", "#seq=01", "#seq=00", "#seq=", "#seq=-1", "#seq=+1", "#seq=1x",
                               "#seq=1#seq=2", "#seq= 1", "#seq=1.0", "#x", "#", "#SEQ=1", "#seq", "#seq=99999999999999999",
                               "#seq=\xD9\xA1" /* Arabic-Indic one */}) {
    const std::string uri = kA + fragment;
    BOOST_TEST(error_of([&] { decode_reference_uri(uri); }) == kInvalidA + acp::support::to_json_text(json::value(uri)),
               fragment);
  }
  // The contract's decoder refuses every fragment, anchors included (the golden vectors' decode).
  BOOST_TEST(error_of([&] { decode_uri(kA + "#seq=1"); }) == kInvalidA + "\"" + kA + "#seq=1\"");
  // A non-canonical payload stays invalid with an anchor, named whole.
  BOOST_TEST(error_of([&] { decode_reference_uri("dsh-session:IiJ#seq=1"); }) ==
             kInvalidA + "\"dsh-session:IiJ#seq=1\"");
  BOOST_TEST(error_of([&] { decode_reference_uri("dsh-session:#seq=1"); }) == kInvalidA + "\"dsh-session:#seq=1\"");
  BOOST_TEST(parse_anchor_seq("9007199254740991") == std::optional<std::int64_t>(kMaxAnchorSeq));
  BOOST_TEST(!parse_anchor_seq("9007199254740992").has_value());
}

BOOST_AUTO_TEST_CASE(mentions_with_an_anchor) {
  // Markdown: the anchor belongs to the URI; the readable text is the label as before.
  ParsedText md = parse_text("see @[A \\] b](" + kA + "#seq=12) now");
  BOOST_TEST(md.text == "see @A ] b now");
  BOOST_REQUIRE(md.references.size() == 1u);
  BOOST_TEST(md.references[0].session_id == "a");
  BOOST_TEST(md.references[0].label == "A ] b");
  BOOST_TEST(md.references[0].anchor_seq == std::optional<std::int64_t>(12));
  // Markdown with any other fragment is malformed, as before.
  for (std::string fragment : {"#seq=012", "#seq=", "#x", "#seq=1x"})
    BOOST_TEST(error_of([&] { parse_text("@[A](" + kA + fragment + ")"); }) ==
                   kInvalidA + acp::support::to_json_text(json::value(kA + fragment)),
               fragment);
  // Bare: `#seq=` and the digits after it; the text resumes after the digits.
  ParsedText bare = parse_text("at " + kA + "#seq=0, and " + kA + "#seq=42.");
  BOOST_TEST(bare.text == "at @a, and @a.");
  BOOST_REQUIRE(bare.references.size() == 2u);
  BOOST_TEST(bare.references[0].anchor_seq == std::optional<std::int64_t>(0));
  BOOST_TEST(bare.references[1].anchor_seq == std::optional<std::int64_t>(42));
  // Bare text that is no anchor stays text after the reference, exactly as before anchors.
  for (std::string rest : {"#seq", "#seq=", "#seq=x", "#x", "#", "#SEQ=1"}) {
    ParsedText p = parse_text(kA + rest + " end");
    BOOST_TEST(p.text == "@a" + rest + " end", rest);
    BOOST_REQUIRE(p.references.size() == 1u);
    BOOST_TEST(!p.references[0].anchor_seq.has_value(), rest);
  }
  // Digits after `#seq=` that are no seq are refused, like a non-canonical payload.
  for (std::string digits : {"01", "9007199254740992", "00"})
    BOOST_TEST(error_of([&] { parse_text("see " + kA + "#seq=" + digits + " end"); }) ==
                   kInvalidA + "\"" + kA + "#seq=" + digits + "\"",
               digits);
  // Old URIs are unchanged: no anchor.
  ParsedText old = parse_text("@[x](" + kA + ") " + kA);
  BOOST_TEST(old.text == "@x @a");
  BOOST_TEST(!old.references[0].anchor_seq.has_value());
  BOOST_TEST(!old.references[1].anchor_seq.has_value());
  // format_mention writes what parse_text reads back.
  const std::string mention = format_mention(SessionReference{"a", std::string("L]"), 5});
  BOOST_TEST(mention == "@[L\\]](" + kA + "#seq=5)");
  BOOST_TEST(parse_text(mention).references[0].anchor_seq == std::optional<std::int64_t>(5));
}

BOOST_AUTO_TEST_CASE(first_mention_decides_the_anchor) {
  std::vector<SessionReference> refs{{"a", std::string("first"), 3}, {"b", std::nullopt, std::nullopt},
                                     {"a", std::string("second"), 9},
                                     {"b", std::nullopt, 4}};
  auto normalized = normalize_references("target", refs, 3);
  BOOST_REQUIRE(normalized.size() == 2u);
  BOOST_TEST(normalized[0].label == "first");
  BOOST_TEST(normalized[0].anchor_seq == std::optional<std::int64_t>(3));
  BOOST_TEST(normalized[1].label == "b");
  BOOST_TEST(!normalized[1].anchor_seq.has_value());  // the first mention had none
}

BOOST_AUTO_TEST_CASE(centred_retention_order_and_budget) {
  const std::int64_t fixed = kSevenFixed;
  // Item sizes: user 23 + 12 = 35, assistant 28 + 12 = 40; the anchored one + 16; one comma between two.
  auto size_of = [](int i) { return i % 2 ? 40 : 35; };
  auto budget_keeping = [&](std::vector<int> items) {
    std::int64_t b = fixed + 16 + std::int64_t(items.size()) - 1;
    for (int i : items) b += size_of(i);
    return b;
  };
  struct Case {
    std::int64_t anchor;
    std::vector<int> kept;  // in the order neighbours join
  };
  for (const Case& c : {Case{3, {3}}, Case{3, {3, 4}}, Case{3, {3, 4, 2}}, Case{3, {3, 4, 2, 5}}, Case{3, {3, 4, 2, 5, 1}},
                        Case{3, {3, 4, 2, 5, 1, 6, 0}}, Case{0, {0, 1, 2}}, Case{6, {6, 5, 4}}, Case{5, {5, 6, 4, 3, 2}}}) {
    // Exactly the budget of the kept items: one byte less loses the last to join.
    const std::int64_t budget = budget_keeping(c.kept);
    auto ctx = render(seven(), c.anchor, budget);
    json::object data = data_of(ctx.prompt)[0].as_object();
    BOOST_TEST(measured(data) == static_cast<std::size_t>(budget));
    std::vector<int> sorted = c.kept;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> expected;
    for (int i : sorted) expected.push_back("message-m" + std::to_string(i));
    BOOST_TEST(texts_of(data) == expected, "anchor " << c.anchor << " keeping " << c.kept.size());
    BOOST_TEST(data.at("anchorSeq") == json::value(c.anchor));
    const auto& ref = ctx.source.at("references").at(0).as_object();
    BOOST_TEST(ref.at("anchor") == json::value(c.anchor));
    BOOST_TEST(ref.at("anchorSeq") == json::value(c.anchor));
    BOOST_TEST(ref.at("retainedMessages") == json::value(std::int64_t(c.kept.size())));
    BOOST_TEST(ref.at("omittedMessages") == json::value(std::int64_t(7 - c.kept.size())));
    BOOST_TEST(ref.at("omittedBytes") == json::value(std::int64_t(10 * (7 - c.kept.size()))));
    BOOST_TEST(ref.at("truncated") == json::value(c.kept.size() < 7));
    if (c.kept.size() > 1 && c.kept.size() < 7) {
      // One byte less: the last neighbour to join is left out (the other side may still take a smaller one).
      json::object less = data_of(render(seven(), c.anchor, budget - 1).prompt)[0].as_object();
      const auto texts = texts_of(less);
      const std::string last = "message-m" + std::to_string(c.kept.back());
      BOOST_TEST((std::find(texts.begin(), texts.end(), last) == texts.end()), "anchor " << c.anchor);
      BOOST_TEST(measured(less) <= static_cast<std::size_t>(budget - 1));
    }
  }
  // The anchored item is marked, and only it; key order as documented.
  auto ctx = render(seven(), 2, std::int64_t{1} << 40);
  const std::string& prompt = ctx.prompt;
  BOOST_TEST(prompt.find(R"("capturedThroughSeq":6,"anchorSeq":2,"conversation":[)") != std::string::npos);
  BOOST_TEST(prompt.find(R"({"role":"user","anchored":true,"text":"message-m2"})") != std::string::npos);
  BOOST_TEST(prompt.find("anchored") == prompt.rfind("anchored"));
  BOOST_TEST(acp::support::to_json_text(ctx.source.at("references").at(0)) ==
             R"({"sessionId":"s","label":"s","capturedThroughSeq":6,"compacted":false,"originalMessages":7,)"
             R"("retainedMessages":7,"omittedMessages":0,"omittedBytes":0,"truncated":false,"inputIndex":0,)"
             R"("anchor":2,"anchorSeq":2})");
}

BOOST_AUTO_TEST_CASE(a_side_closes_at_the_first_neighbour_that_does_not_fit) {
  // m4 is large: the newer side closes there (m5 and m6 never join though small), the older side goes on.
  auto events = seven();
  events[4] = user(std::string(400, 'L'), 4);
  auto ctx = render(events, 3, 330);
  json::object data = data_of(ctx.prompt)[0].as_object();
  BOOST_TEST(measured(data) <= 330u);
  BOOST_TEST(texts_of(data) == (std::vector<std::string>{"message-m0", "message-m1", "message-m2", "message-m3"}));
  // Checkpoints are not kept for their own sake when centred: the window is contiguous.
  auto with_checkpoint = seven();
  with_checkpoint[0] = checkpoint("summary of before", 0);
  const AdditionalContext around = render(with_checkpoint, 5, 240);
  json::object centred = data_of(around.prompt)[0].as_object();
  BOOST_TEST(measured(centred) <= 240u);
  BOOST_TEST(texts_of(centred) == (std::vector<std::string>{"message-m4", "message-m5", "message-m6"}));
  // The source is still compacted.
  BOOST_TEST(around.source.at("references").at(0).at("compacted") == json::value(true));
}

BOOST_AUTO_TEST_CASE(an_anchored_item_too_large_is_cut_with_the_notice) {
  auto events = seven();
  events[3] = assistant(std::string(1000, 'x') + "END", 3);
  auto ctx = render(events, 3, 300);
  json::object data = data_of(ctx.prompt)[0].as_object();
  BOOST_TEST(measured(data) <= 300u);
  const auto texts = texts_of(data);
  BOOST_REQUIRE(texts.size() == 1u);
  BOOST_TEST(texts[0].ends_with(" UTF-8 bytes \xE2\x80\xA6]"));
  BOOST_TEST(texts[0].find("END") != std::string::npos);  // head and tail are kept
  const auto& ref = ctx.source.at("references").at(0).as_object();
  BOOST_TEST(ref.at("truncated") == json::value(true));
  BOOST_TEST(ref.at("omittedMessages") == json::value(6));
  // A budget below the fixed fields and one empty anchored shell fails as before.
  BOOST_TEST(error_of([&] { render(events, 3, 100); }).starts_with("SESSION_REFERENCE_BUDGET_EXCEEDED"));
}

BOOST_AUTO_TEST_CASE(anchor_on_an_empty_source_and_without_anchor) {
  auto empty = render({}, 5, 1000);
  BOOST_TEST(empty.prompt.find(R"("capturedThroughSeq":null,"anchorSeq":null,"conversation":[])") != std::string::npos);
  BOOST_TEST(empty.source.at("references").at(0).at("anchorSeq").is_null());
  BOOST_TEST(empty.source.at("references").at(0).at("anchor") == json::value(5));
  // No anchor: no new keys anywhere, and the newest-first retention as before.
  auto plain = render(seven(), std::nullopt, 1000);
  BOOST_TEST(plain.prompt.find("anchor") == std::string::npos);
  BOOST_TEST(!plain.source.at("references").at(0).as_object().contains("anchor"));
  BOOST_TEST(!plain.source.at("references").at(0).as_object().contains("anchorSeq"));
}

BOOST_AUTO_TEST_CASE(snapshot_hosts_resolve_by_item_seqs) {
  // Items at seqs 2, 5, 9 (the snapshot's own seqs): a seq on an item, between items, before and after all.
  std::vector<ProjectedItem> items(3);
  items[0].seq = 2;
  items[1].seq = 5;
  items[2].seq = 9;
  BOOST_TEST(anchor_by_item_seqs(items, 5) == std::optional<std::size_t>(1));
  BOOST_TEST(anchor_by_item_seqs(items, 3) == std::optional<std::size_t>(1));
  BOOST_TEST(anchor_by_item_seqs(items, 0) == std::optional<std::size_t>(0));
  BOOST_TEST(anchor_by_item_seqs(items, 10) == std::optional<std::size_t>(2));
  BOOST_TEST(!anchor_by_item_seqs({}, 1).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the anchored streaming read ----
namespace {

json::object plain_event(std::string_view type, std::int64_t seq) {
  return json::object{{"type", type}, {"seq", seq}, {"time", 1700000000000 + seq}, {"data", json::object{{"turn", 1}}}};
}

// A compaction checkpoint at `seq` replacing the surface seqs start..end (listed in `sources`).
json::object replacing_checkpoint(std::string_view text, std::int64_t seq, std::int64_t start, std::int64_t end,
                                  json::array sources) {
  json::object e = checkpoint(text, seq);
  e["surfaceOp"] = json::object{{"op", "replace"}, {"start", start}, {"end", end}};
  e["sourceEventSeqs"] = std::move(sources);
  return e;
}

ProjectedSource stream_read(const std::vector<json::object>& events, std::int64_t budget,
                            std::optional<std::int64_t> anchor, int* passes = nullptr) {
  EventStream stream = [&](const EventSink& sink) {
    if (passes) ++*passes;
    for (const auto& e : events) sink(json::object(e));
    StreamedLog log;
    log.header.id = "src";
    if (!events.empty()) log.captured_through_seq = std::int64_t(events.size()) - 1;
    return log;
  };
  return project_log(stream, budget, anchor);
}

std::optional<std::int64_t> anchored_seq(const ProjectedSource& s) {
  if (!s.anchor) return std::nullopt;
  return s.conversation.items[*s.anchor].seq;
}

// u0 a1 t2(tool) u3 a4, compact/start 5, summary 6, checkpoint 7 replacing 0..3, compact/end 8, u9, chunk 10, a11
std::vector<json::object> compacted_log() {
  std::vector<json::object> e;
  e.push_back(user("u0", 0));
  e.push_back(assistant("a1", 1));
  json::object tool{{"type", "tool/result"}, {"seq", 2}, {"time", 1700000000002},
                    {"data", json::object{{"turn", 1}, {"step", 1}, {"callId", "c"}, {"content", json::array{}},
                                          {"isError", false}}},
                    {"surfaceOp", "append"}};
  e.push_back(std::move(tool));
  e.push_back(user("u3", 3));
  e.push_back(assistant("a4", 4));
  e.push_back(plain_event("compact/start", 5));
  e.push_back(plain_event("compact/summary", 6));
  e.push_back(replacing_checkpoint("summary of u0..u3", 7, 0, 3, json::array{5, 6, 0, 1, 2, 3}));
  e.push_back(plain_event("compact/end", 8));
  e.push_back(user("u9", 9));
  e.push_back(plain_event("assistant/chunk", 10));
  e.push_back(assistant("a11", 11));
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(anchored_reads)

BOOST_AUTO_TEST_CASE(the_anchor_follows_compaction_and_the_log) {
  const auto log = compacted_log();
  // surface: [checkpoint 7, a4, u9, a11]
  struct Case {
    std::int64_t anchor;
    std::int64_t centred;
  };
  for (const Case& c : {Case{0, 7}, Case{2, 7}, Case{3, 7},  // inside the compacted range: the checkpoint
                        Case{4, 4},                           // on the surface
                        Case{5, 7}, Case{6, 7},               // log-only, followed by the checkpoint
                        Case{7, 7}, Case{8, 9},               // compact/end: the next message
                        Case{10, 11}, Case{11, 11},           // a chunk: the answer that follows
                        Case{12, 11}, Case{kMaxAnchorSeq, 11}}) {  // beyond the log: the newest
    ProjectedSource s = stream_read(log, 65536, c.anchor);
    BOOST_TEST(anchored_seq(s) == std::optional<std::int64_t>(c.centred), "anchor " << c.anchor);
  }
  // A nested compaction: a checkpoint that replaces the checkpoint covers what that one covered.
  auto nested = log;
  nested.push_back(replacing_checkpoint("summary of everything", 12, 7, 9, json::array{7, 4, 9}));
  nested.push_back(user("u13", 13));
  for (std::int64_t anchor : {0, 3, 4, 7, 9}) {
    ProjectedSource s = stream_read(nested, 65536, anchor);
    BOOST_TEST(anchored_seq(s) == std::optional<std::int64_t>(12), "anchor " << anchor);
  }
  BOOST_TEST(anchored_seq(stream_read(nested, 65536, 10)) == std::optional<std::int64_t>(11));
  BOOST_TEST(anchored_seq(stream_read(nested, 65536, 12)) == std::optional<std::int64_t>(12));
  BOOST_TEST(anchored_seq(stream_read(nested, 65536, 14)) == std::optional<std::int64_t>(13));
  // No anchor: nothing set. No items: nothing to centre on.
  BOOST_TEST(!stream_read(log, 65536, std::nullopt).anchor.has_value());
  BOOST_TEST(!stream_read({}, 65536, 0).anchor.has_value());
}

BOOST_AUTO_TEST_CASE(two_passes_hold_only_texts_near_the_anchor) {
  // 400 messages of 1000 bytes, anchored in the middle, budget 8 KiB: the first pass holds no text,
  // the second fetches only what lies within the budget of the anchor.
  std::vector<json::object> events;
  for (int i = 0; i < 400; ++i) events.push_back(user(std::to_string(i) + std::string(1000, 'x'), i));
  StreamingProjector projector(8192, 200);
  for (const auto& e : events) projector.add(e);
  BOOST_TEST(projector.held_texts() == 0u);
  const auto missing = projector.missing();
  BOOST_TEST(missing.size() >= 8u);
  BOOST_TEST(missing.size() <= 17u);
  BOOST_TEST((std::find(missing.begin(), missing.end(), 200) != missing.end()));
  int passes = 0;
  ProjectedSource s = stream_read(events, 8192, 200, &passes);
  BOOST_TEST(passes == 2);
  std::size_t held = 0;
  for (const auto& item : s.conversation.items) held += item.released() ? 0 : 1;
  BOOST_TEST(held == missing.size());
  std::vector<ProjectedSource> sources;
  sources.push_back(std::move(s));
  auto ctx = render_context({NormalizedReference{"src", "src", 200}}, sources, 8192);
  json::object data = data_of(ctx.prompt)[0].as_object();
  BOOST_TEST(measured(data) <= 8192u);
  BOOST_TEST(data.at("anchorSeq") == json::value(200));
  const auto texts = texts_of(data);
  BOOST_TEST(std::any_of(texts.begin(), texts.end(), [](const std::string& t) { return t.starts_with("200x"); }));
  BOOST_TEST(std::any_of(texts.begin(), texts.end(), [](const std::string& t) { return t.starts_with("199x"); }));
  BOOST_TEST(std::any_of(texts.begin(), texts.end(), [](const std::string& t) { return t.starts_with("201x"); }));
}

namespace {

// An independent model of the anchor over a whole log in memory: every surface node carries the set
// of seqs it covers (its own and, for a replacement, everything it replaced); the anchor is the node
// covering the smallest surface-event seq >= N, and the item is the first projected one at or after
// that node, else the last.
std::optional<std::size_t> model_anchor(const std::vector<json::object>& events, std::int64_t n) {
  struct Node {
    std::int64_t seq;
    std::set<std::int64_t> covers;
  };
  std::vector<Node> nodes;
  std::optional<std::int64_t> first_at_or_after;
  for (const auto& e : events) {
    const auto* op = e.if_contains("surfaceOp");
    if (!op) continue;
    const std::int64_t seq = e.at("seq").as_int64();
    if (seq >= n && !first_at_or_after) first_at_or_after = seq;
    if (op->is_string()) {
      nodes.push_back(Node{seq, {seq}});
      continue;
    }
    const std::int64_t start = op->at("start").as_int64(), end = op->at("end").as_int64();
    auto a = std::find_if(nodes.begin(), nodes.end(), [&](const Node& x) { return x.seq == start; });
    auto b = std::find_if(nodes.begin(), nodes.end(), [&](const Node& x) { return x.seq == end; });
    Node merged{seq, {seq}};
    for (auto it = a; it <= b; ++it) merged.covers.insert(it->covers.begin(), it->covers.end());
    auto at = nodes.erase(a, b + 1);
    nodes.insert(at, std::move(merged));
  }
  std::vector<std::size_t> item_nodes;  // the node position of each projected item
  std::string joined;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (project_event(events[std::size_t(nodes[i].seq)], joined)) item_nodes.push_back(i);
  if (item_nodes.empty()) return std::nullopt;
  if (!first_at_or_after) return item_nodes.size() - 1;
  std::size_t node = 0;
  while (!nodes[node].covers.contains(*first_at_or_after)) ++node;
  for (std::size_t k = 0; k < item_nodes.size(); ++k)
    if (item_nodes[k] >= node) return k;
  return item_nodes.size() - 1;
}

// A random valid log: messages, tool results, log-only events and compactions over any range.
std::vector<json::object> random_log(unsigned seed, int steps) {
  std::mt19937 rng(seed);
  auto roll = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<json::object> events;
  std::vector<std::int64_t> surface_seqs;
  auto seq = [&] { return std::int64_t(events.size()); };
  auto text = [&] { return std::string(std::size_t(roll(5) == 0 ? roll(2000) : roll(200)), char('a' + roll(26))); };
  for (int i = 0; i < steps; ++i) {
    const int pick = roll(100);
    if (pick < 30) {
      events.push_back(user(std::to_string(seq()) + text(), seq()));
    } else if (pick < 55) {
      events.push_back(assistant(std::to_string(seq()) + text(), seq()));
    } else if (pick < 62) {
      events.push_back(user("injected", seq()));
      events.back().at("data").as_object()["source"] = json::object{{"kind", "plugin"}, {"plugin", "goal"}};
    } else if (pick < 70) {
      json::object tool{{"type", "tool/result"}, {"seq", seq()}, {"time", 1700000000000 + seq()},
                        {"data", json::object{{"turn", 1}, {"step", 1}, {"callId", "c" + std::to_string(seq())},
                                              {"content", json::array{}}, {"isError", false}}},
                        {"surfaceOp", "append"}};
      events.push_back(std::move(tool));
    } else if (pick < 80 && !surface_seqs.empty()) {
      const std::size_t a = std::size_t(roll(int(surface_seqs.size())));
      const std::size_t b = a + std::size_t(roll(int(surface_seqs.size() - a)));
      json::array sources;
      for (std::size_t k = a; k <= b; ++k) sources.push_back(surface_seqs[k]);
      const std::int64_t s = seq();
      events.push_back(replacing_checkpoint("checkpoint " + std::to_string(s) + text(), s, surface_seqs[a],
                                            surface_seqs[b], std::move(sources)));
      surface_seqs.erase(surface_seqs.begin() + std::ptrdiff_t(a), surface_seqs.begin() + std::ptrdiff_t(b) + 1);
      surface_seqs.insert(surface_seqs.begin() + std::ptrdiff_t(a), s);
      continue;
    } else {
      events.push_back(plain_event(roll(2) ? "assistant/chunk" : "turn/end", seq()));
      continue;
    }
    surface_seqs.push_back(seq() - 1);
  }
  return events;
}

std::string outcome(const std::function<ProjectedSource()>& read, std::int64_t anchor, std::int64_t budget) {
  try {
    std::vector<ProjectedSource> sources;
    sources.push_back(read());
    AdditionalContext c = render_context({NormalizedReference{"src", "label <x>", anchor}}, sources, budget);
    return "ok " + c.prompt + "\n" + acp::support::to_json_text(c.source);
  } catch (const SessionReferenceError& e) {
    return "error " + std::string(e.code_name()) + ": " + e.what();
  } catch (const std::exception& e) {
    return std::string("failure: ") + e.what();
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(streaming_matches_a_whole_log_model) {
  // The streamed read (first pass without texts, second pass near the anchor) renders the same bytes
  // as the whole log folded in memory with the model's anchor; retention's own checks make sure no
  // released text is ever needed.
  int compared = 0, rendered = 0, on_checkpoints = 0, released = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    const auto events = random_log(seed, 30 + int(seed % 7) * 15);
    const auto surface_seqs = acp::store::fold_surface(events);
    std::mt19937 rng(seed * 7919u);
    for (std::int64_t budget : {std::int64_t{1} << 40, std::int64_t{4000}, std::int64_t{900}, std::int64_t{300}}) {
      for (int k = 0; k < 6; ++k) {
        const std::int64_t anchor =
            std::uniform_int_distribution<std::int64_t>(0, std::int64_t(events.size()) + 2)(rng);
        auto whole = [&] {
          ProjectedSource s;
          s.session_id = "src";
          s.captured_through_seq = std::int64_t(events.size()) - 1;
          std::vector<json::object> surface;
          for (auto q : surface_seqs) surface.push_back(events[std::size_t(q)]);
          ProjectedConversation c = project(surface);
          for (auto& item : c.items) {  // own the texts: `surface` dies with this lambda
            c.joined_storage.push_back(std::make_unique<std::string>(item.text));
            item.text = *c.joined_storage.back();
          }
          s.conversation = std::move(c);
          s.anchor = model_anchor(events, anchor);
          return s;
        };
        const std::string expected = outcome(whole, anchor, budget);
        const std::string got = outcome([&] { return stream_read(events, budget, anchor); }, anchor, budget);
        // The cases that matter are there: rendered snapshots, anchors a compaction moved onto its
        // checkpoint, and texts the streamed read never fetched.
        rendered += expected.starts_with("ok ");
        if (ProjectedSource w = whole(); w.anchor) {
          const ProjectedItem& item = w.conversation.items[*w.anchor];
          on_checkpoints += item.checkpoint && item.seq > anchor;
        }
        ProjectedSource s = stream_read(events, budget, anchor);
        released += std::any_of(s.conversation.items.begin(), s.conversation.items.end(),
                                [](const ProjectedItem& i) { return i.released(); });
        BOOST_TEST(got == expected, "seed " << seed << " budget " << budget << " anchor " << anchor);
        BOOST_TEST(!got.starts_with("failure"), got);
        ++compared;
      }
    }
  }
  BOOST_TEST(compared == 60 * 4 * 6);
  BOOST_TEST_MESSAGE("rendered " << rendered << ", on checkpoints " << on_checkpoints << ", with released texts "
                                 << released);
  BOOST_TEST(rendered > compared / 2);
  BOOST_TEST(on_checkpoints > 20);
  BOOST_TEST(released > 50);
}

BOOST_AUTO_TEST_SUITE_END()
