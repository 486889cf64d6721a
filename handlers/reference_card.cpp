#include "handlers/reference_card.hpp"

#include "handlers/card_text.hpp"
#include "refs/uri.hpp"
#include "store/records.hpp"
#include "support/json_number.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;
using store::string_at;

namespace {

std::int64_t int_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? support::json_integer(*v).value_or(0) : 0;
}

// CodeCompanion cuts a tool title at its first colon.
std::string title_label(std::string_view label) {
  std::string out;
  for (char c : one_line(label)) {
    if (c == ':') out += " -";
    else out.push_back(c);
  }
  return out;
}

std::string summary_line(const json::object& ref) {
  std::string line = one_line(string_at(ref, "label")) + " (" + one_line(string_at(ref, "sessionId")) + "): retained " +
                     std::to_string(int_at(ref, "retainedMessages")) + " of " +
                     std::to_string(int_at(ref, "originalMessages")) + " messages";
  std::int64_t omitted = int_at(ref, "omittedMessages"), bytes = int_at(ref, "omittedBytes");
  if (omitted || bytes) {
    line += "; omitted ";
    if (omitted) line += std::to_string(omitted) + " messages";
    if (omitted && bytes) line += ", ";
    if (bytes) line += std::to_string(bytes) + " bytes";
  }
  if (const auto* c = ref.if_contains("compacted"); c && c->is_bool() && c->get_bool()) line += "; compacted";
  if (const auto* s = ref.if_contains("capturedThroughSeq"))
    if (auto seq = support::json_integer(*s)) line += "; captured through seq " + std::to_string(*seq);
  if (const auto* s = ref.if_contains("anchorSeq"))
    if (auto seq = support::json_integer(*s)) line += "; centred on seq " + std::to_string(*seq);
  return line;
}

} // namespace

bool is_reference_source(const json::object& source) {
  const auto* kind = source.if_contains("kind");
  return kind && kind->is_string() && kind->get_string() == "session-reference";
}

protocol::ToolCall reference_card(std::int64_t snapshot_seq, const json::object& source) {
  protocol::ToolCall card;
  card.toolCallId = "dsh-ref-" + std::to_string(snapshot_seq);
  card.kind = protocol::ToolKind::read;
  card.status = protocol::ToolCallStatus::completed;
  std::string labels, lines;
  json::array raw_refs;
  if (const auto* refs = source.if_contains("references"); refs && refs->is_array()) {
    for (const auto& r : refs->get_array()) {
      const auto* ref = r.if_object();
      if (!ref) continue;
      std::string id(string_at(*ref, "sessionId")), label(string_at(*ref, "label"));
      labels += (labels.empty() ? "" : ", ") + title_label(label);
      lines += (lines.empty() ? "" : "\n") + summary_line(*ref);
      // The URI as the user could write it again: with the anchor they asked for.
      std::optional<std::int64_t> anchor;
      if (const auto* a = ref->if_contains("anchor")) anchor = support::json_integer(*a);
      raw_refs.push_back(
          json::object{{"sessionId", id}, {"label", label}, {"uri", refs::encode_reference_uri(id, anchor)}});
    }
  }
  card.title = "Referenced sessions \u00B7 " + labels;
  card.content = std::vector<protocol::ToolCallContent>{
      protocol::ToolContent{protocol::TextContent{lines, std::nullopt, std::nullopt}}};
  card.rawInput = json::object{{"references", std::move(raw_refs)}};
  // The record as docs/session-references.md#data-object-and-source-record defines it. A 0.1
  // root stores it with 0.1.1's form:"recall" (docs/session-references.md#in-the-log), which the
  // live card (built before the record is written) never has: the replayed card is the same in both
  // layouts.
  json::object meta = source;
  meta.erase("form");
  card._meta = json::object{{"dsh-acp/sessionReference", std::move(meta)}};
  return card;
}

} // namespace acp::handlers
