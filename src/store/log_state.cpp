#include "store/log_state.hpp"

#include "store/records.hpp"

namespace acp::store {

namespace json = boost::json;

const char* const kToolOutcomeUnknownText =
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is "
    "unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or "
    "idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";
const char* const kToolNotStartedText =
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

void LogState::observe(const json::object& event) {
  const std::int64_t seq = count_++;
  if (auto t = member_at(event, 2, "time")) {
    if (auto ti = safe_int(*t)) last_time_ = *ti;
  }
  auto type = string_member(event, 0, "type");
  const json::object* data = object_member(event, 3, "data");
  static const json::object empty;
  if (!data) data = &empty;
  // Copies get storage of their own: an event may live in its line's arena (EventLifetime::
  // transient), which a copy made with the event's storage would keep alive for the whole scan.
  auto get = [&](std::string_view k) -> json::value {
    auto v = data->if_contains(k);
    return v ? json::value(*v, json::storage_ptr()) : json::value();
  };
  if (type == "turn/start") {
    open_turn_ = get("turn");
    open_step_.reset();
    if (auto t = safe_int(get("turn")); t && *t > last_turn_) last_turn_ = *t;
    reset_pending();
  } else if (type == "turn/end") {
    open_turn_.reset();
    open_step_.reset();
    reset_pending();
  } else if (type == "step/start") {
    open_step_.emplace(get("turn"), get("step"));
  } else if (type == "step/end") {
    open_step_.reset();
    reset_pending();
  } else if (type == "assistant/message") {
    if (auto content = data->if_contains("content"); content && content->is_array()) {
      for (const auto& block : content->get_array()) {
        const auto* b = block.if_object();
        if (!b || string_at(*b, "type") != "tool-call") continue;
        pending_.push_back({std::string(string_at(*b, "id")), get("turn"), get("step"), std::nullopt});
      }
    }
  } else if (type == "tool/call") {
    auto id = string_at(*data, "callId");
    for (auto& p : pending_)
      if (p.call_id == id && !p.call_seq) p.call_seq = seq;
  } else if (type == "tool/result") {
    auto id = string_at(*data, "callId");
    std::erase_if(pending_, [&](const PendingCall& p) { return p.call_id == id; });
  } else if (type == "session/title") {
    TitleInfo t;
    t.title = std::string(string_at(*data, "title"));
    if (auto m = data->if_contains("messageSeqs"); m && m->is_array()) t.messageSeqs = m->get_array();
    if (auto s = object_at(*data, "source")) t.source = *s;
    t.eventSeq = seq;
    t.updatedAt = last_time_;
    title_ = std::move(t);
  }
}

std::vector<json::object> LogState::closers() const {
  std::vector<json::object> out;
  if (!open_turn_) return out;
  std::int64_t seq = count_;
  for (const auto& p : pending_) {
    json::object data;
    data["turn"] = p.turn;
    data["step"] = p.step;
    data["callId"] = p.call_id;
    json::object text;
    text["type"] = "text";
    text["text"] = p.call_seq ? kToolOutcomeUnknownText : kToolNotStartedText;
    data["content"] = json::array{std::move(text)};
    data["isError"] = true;
    json::object error;
    error["name"] = p.call_seq ? "ToolOutcomeUnknownError" : "ToolNotStartedError";
    error["code"] = p.call_seq ? "TOOL_OUTCOME_UNKNOWN" : "TOOL_NOT_STARTED";
    data["error"] = std::move(error);
    std::optional<json::array> sources;
    if (p.call_seq) sources = json::array{*p.call_seq};
    out.push_back(event_record("tool/result", seq++, last_time_, std::move(data), json::value("append"), sources,
                               SurfaceKeyOrder::surface_op_first));
  }
  if (open_step_) {
    json::object data;
    data["turn"] = open_step_->first;
    data["step"] = open_step_->second;
    out.push_back(event_record("step/end", seq++, last_time_, std::move(data), std::nullopt, std::nullopt));
  }
  json::object reason;
  reason["kind"] = "interrupted";
  json::object data;
  data["turn"] = *open_turn_;
  data["reason"] = std::move(reason);
  out.push_back(event_record("turn/end", seq++, last_time_, std::move(data), std::nullopt, std::nullopt));
  return out;
}

} // namespace acp::store
