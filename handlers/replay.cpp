#include "handlers/replay.hpp"

#include "engine/conversation.hpp"
#include "handlers/compaction_card.hpp"
#include "handlers/reference_card.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;
using namespace protocol;
using store::object_at;
using store::string_at;

namespace {

std::int64_t num(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->get_int64() : 0;
}

TextContent text_block(std::string text) { return TextContent{std::move(text), std::nullopt, std::nullopt}; }

SessionUpdate agent_text(std::string text) { return AgentMessageChunk{text_block(std::move(text)), {}, {}}; }

json::value parse_arguments(const json::value* args) {
  if (!args) return json::object{};
  if (!args->is_string()) return *args;
  boost::system::error_code ec;
  json::value parsed = json::parse(args->get_string(), ec);
  if (ec) return *args;  // models sometimes stream invalid JSON: show it as the string it is
  return parsed;
}

// A generic card: harness tools have no ACP kind we could honestly claim.
ToolCall tool_call_card(std::string id, std::string_view name, const json::value* arguments) {
  ToolCall call;
  call.toolCallId = std::move(id);
  call.title = name.empty() ? std::string("tool") : std::string(name);
  call.kind = ToolKind::other;
  call.status = ToolCallStatus::in_progress;
  if (arguments) call.rawInput = parse_arguments(arguments);
  return call;
}

PlanEntryStatus plan_status(std::string_view s) {
  if (s == "in_progress" || s == "in-progress") return PlanEntryStatus::in_progress;
  if (s == "completed" || s == "done") return PlanEntryStatus::completed;
  return PlanEntryStatus::pending;
}

} // namespace

void Replayer::on_event(const json::object& event, std::vector<SessionUpdate>& out) {
  std::string_view type = string_at(event, "type");
  const json::object* data = object_at(event, "data");
  if (!data) return;

  if (type == "user/message" || type == "steering/message") {
    const json::object* source = object_at(*data, "source");
    if (!source) return;
    if (type == "user/message" && is_reference_source(*source)) {
      // Its own storage: not the snapshot line's arena, which holds the whole snapshot text.
      pending_card_.emplace(num(event, "seq"), json::object(*source, json::storage_ptr()));
      return;
    }
    if (type == "user/message" && is_checkpoint_source(*source)) {
      out.push_back(compaction_card(event, compact_events_));
      return;
    }
    if (string_at(*source, "kind") != "user") return;  // injected context is never shown as user text
    if (const auto* content = data->if_contains("content")) {
      std::string text = engine::content_text(*content);
      if (!text.empty()) out.push_back(UserMessageChunk{text_block(std::move(text)), {}, {}});
    }
    if (pending_card_) {
      out.push_back(reference_card(pending_card_->first, pending_card_->second));
      pending_card_.reset();
    }
  } else if (type == "assistant/chunk") {
    const json::object* chunk = object_at(*data, "chunk");
    if (!chunk) return;
    std::string_view kind = string_at(*chunk, "type");
    std::string text(string_at(*chunk, "text"));
    if (text.empty()) return;
    if (kind == "text-delta") out.push_back(agent_text(std::move(text)));
    else if (kind == "reasoning-delta") out.push_back(AgentThoughtChunk{text_block(std::move(text)), {}, {}});
    else return;
    const std::pair<std::int64_t, std::int64_t> step{num(*data, "turn"), num(*data, "step")};
    if (last_step_with_chunks_ != step) {
      steps_with_chunks_.insert(step);
      last_step_with_chunks_ = step;
    }
  } else if (type == "assistant/message") {
    bool streamed = steps_with_chunks_.count({num(*data, "turn"), num(*data, "step")}) > 0;
    const auto* content = data->if_contains("content");
    if (!content || !content->is_array()) return;
    for (const auto& b : content->get_array()) {
      const auto* block = b.if_object();
      if (!block) continue;
      std::string_view kind = string_at(*block, "type");
      if (kind == "text" && !streamed && !string_at(*block, "text").empty()) {
        out.push_back(agent_text(std::string(string_at(*block, "text"))));
      } else if (kind == "reasoning" && !streamed && !string_at(*block, "text").empty()) {
        out.push_back(AgentThoughtChunk{text_block(std::string(string_at(*block, "text"))), {}, {}});
      } else if (kind == "tool-call") {
        std::string id(string_at(*block, "id"));
        if (id.empty() || !tool_calls_shown_.insert(id).second) continue;
        out.push_back(tool_call_card(std::move(id), string_at(*block, "name"), block->if_contains("arguments")));
      }
    }
  } else if (type == "tool/call") {
    std::string id(string_at(*data, "callId"));
    if (id.empty() || !tool_calls_shown_.insert(id).second) return;
    out.push_back(tool_call_card(std::move(id), string_at(*data, "name"), data->if_contains("arguments")));
  } else if (type == "tool/result") {
    std::string id(string_at(*data, "callId"));
    if (id.empty()) return;
    if (tool_calls_shown_.insert(id).second) {
      // A result whose call was never shown still needs its card to attach to.
      out.push_back(tool_call_card(id, {}, nullptr));
    }
    ToolCallUpdate update;
    update.toolCallId = id;
    const auto* is_error = data->if_contains("isError");
    update.status = is_error && is_error->is_bool() && is_error->get_bool() ? ToolCallStatus::failed
                                                                               : ToolCallStatus::completed;
    if (const auto* content = data->if_contains("content")) {
      std::string text = engine::content_text(*content);
      if (!text.empty()) update.content = std::vector<ToolCallContent>{ToolContent{text_block(std::move(text))}};
    }
    out.push_back(std::move(update));
  } else if (type == "compact/start" || type == "compact/summary") {
    compact_events_.insert(num(event, "seq"));
  } else if (type == "todo/write") {
    Plan plan;
    if (const auto* todos = data->if_contains("todos"); todos && todos->is_array()) {
      for (const auto& t : todos->get_array()) {
        const auto* todo = t.if_object();
        if (!todo) continue;
        plan.entries.push_back(PlanEntry{std::string(string_at(*todo, "content")), PlanEntryPriority::medium,
                                         plan_status(string_at(*todo, "status"))});
      }
    }
    out.push_back(std::move(plan));
  } else if (type == "session/title") {
    SessionInfoUpdate info;
    info.title = std::string(string_at(*data, "title"));
    out.push_back(std::move(info));
  } else if (type == "turn/end") {
    const json::object* reason = object_at(*data, "reason");
    std::string_view kind = reason ? string_at(*reason, "kind") : std::string_view();
    if (kind == "error") {
      std::string message(string_at(*reason, "message"));
      if (message.empty()) {
        if (const json::object* failure = object_at(*reason, "failure")) message = std::string(string_at(*failure, "message"));
      }
      out.push_back(agent_text("\n\n[The turn failed" + (message.empty() ? std::string(".]") : ": " + message + "]")));
    } else if (kind == "interrupted") {
      out.push_back(agent_text("\n\n[The turn was interrupted before it finished.]"));
    }
  }
}

} // namespace acp::handlers
