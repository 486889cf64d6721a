#include "handlers/compaction_card.hpp"

#include "engine/compaction.hpp"
#include "store/records.hpp"
#include "support/json_number.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;
using store::string_at;

namespace {

constexpr std::size_t kSummaryLines = 6;

} // namespace

bool is_checkpoint_source(const json::object& source) {
  return string_at(source, "kind") == "plugin" && string_at(source, "plugin") == "compact";
}

protocol::ToolCall compaction_card(std::int64_t checkpoint_seq, std::size_t messages, const std::string& summary) {
  protocol::ToolCall card;
  card.toolCallId = "dsh-compact-" + std::to_string(checkpoint_seq);
  card.kind = protocol::ToolKind::think;
  card.status = protocol::ToolCallStatus::completed;
  card.title = "Compacted conversation \u00B7 " + std::to_string(messages) + (messages == 1 ? " message" : " messages");
  std::string lines = engine::first_lines(summary, kSummaryLines);
  if (!lines.empty())
    card.content = std::vector<protocol::ToolCallContent>{
        protocol::ToolContent{protocol::TextContent{lines, std::nullopt, std::nullopt}}};
  return card;
}

protocol::ToolCall compaction_card(const json::object& event, const std::set<std::int64_t>& compact_events) {
  std::int64_t seq = 0;
  if (const auto* s = event.if_contains("seq")) seq = support::json_integer(*s).value_or(0);
  // sourceEventSeqs = [compact/start, compact/summary, …shadowed] (other writers may name only the
  // shadowed ones).
  std::size_t messages = 0;
  if (const auto* seqs = event.if_contains("sourceEventSeqs"); seqs && seqs->is_array())
    for (const auto& s : seqs->get_array())
      if (auto n = support::json_integer(s); !n || !compact_events.count(*n)) ++messages;
  // The summary: the text blocks between the preamble block and the closing tag.
  std::string summary;
  if (const json::object* data = store::object_at(event, "data"))
    if (const auto* content = data->if_contains("content"); content && content->is_array()) {
      const auto& blocks = content->get_array();
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const auto* block = blocks[i].if_object();
        if (!block || string_at(*block, "type") != "text") continue;
        std::string_view text = string_at(*block, "text");
        if (blocks.size() >= 3 && (i == 0 || i + 1 == blocks.size())) continue;  // preamble, closing tag
        if (!summary.empty()) summary += "\n";
        summary += text;
      }
    }
  return compaction_card(seq, messages, summary);
}

} // namespace acp::handlers
