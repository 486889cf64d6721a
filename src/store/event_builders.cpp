#include "store/event_builders.hpp"

#include "store/title.hpp"

namespace acp::store::events {

namespace json = boost::json;

namespace {

json::object turn_step(std::int64_t turn, std::int64_t step) {
  json::object d;
  d.reserve(3);  // + a delta's chunk; sized up front, see event_record()
  d["turn"] = turn;
  d["step"] = step;
  return d;
}

NewEvent delta(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text) {
  json::object chunk;
  chunk.reserve(3);
  chunk["type"] = kind;
  chunk["index"] = index;
  chunk["text"] = text;
  json::object d = turn_step(turn, step);
  d["chunk"] = std::move(chunk);
  return {"assistant/chunk", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}


// A turn/start triggered by a message from `source` (key order as the harness writes it).
NewEvent message_turn_start(std::int64_t turn, json::object source) {
  json::object trigger;
  trigger["kind"] = "message";
  trigger["source"] = std::move(source);
  json::object d;
  d["turn"] = turn;
  d["trigger"] = std::move(trigger);
  return {"turn/start", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

} // namespace

NewEvent turn_start(std::int64_t turn) { return message_turn_start(turn, json::object{{"kind", "user"}}); }

NewEvent user_message(std::string_view text) {
  json::object block;
  block["type"] = "text";
  block["text"] = text;
  json::object source;
  source["kind"] = "user";
  return user_message(json::array{std::move(block)}, std::move(source));
}

NewEvent user_message(json::array content, json::object source, std::optional<json::array> source_event_seqs) {
  json::object d;
  d["content"] = std::move(content);
  d["source"] = std::move(source);
  return {"user/message", std::move(d), json::value("append"), std::move(source_event_seqs), std::nullopt};
}

NewEvent session_title(std::string_view title, std::int64_t user_seq) {
  json::object source;
  source["kind"] = "fallback";
  json::object d;
  d["title"] = title;
  d["messageSeqs"] = json::array{user_seq};
  d["source"] = std::move(source);
  return {"session/title", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

std::string fallback_title(std::string_view text) { return make_fallback_title(text); }

NewEvent step_start(std::int64_t turn, std::int64_t step) {
  return {"step/start", turn_step(turn, step), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent step_end(std::int64_t turn, std::int64_t step) {
  return {"step/end", turn_step(turn, step), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent text_delta(std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text) {
  return delta("text-delta", turn, step, index, text);
}

NewEvent reasoning_delta(std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text) {
  return delta("reasoning-delta", turn, step, index, text);
}

NewEvent assistant_message(std::int64_t turn, std::int64_t step, json::array content, std::string_view provider,
                           std::string_view model, std::optional<json::object> usage,
                           std::optional<json::array> source_event_seqs) {
  json::object provenance;
  provenance["provider"] = provider;
  provenance["model"] = model;
  json::object d = turn_step(turn, step);
  d["content"] = std::move(content);
  d["provenance"] = std::move(provenance);
  if (usage) d["usage"] = std::move(*usage);
  return {"assistant/message", std::move(d), json::value("append"), std::move(source_event_seqs), std::nullopt};
}

NewEvent tool_call(std::int64_t turn, std::int64_t step, std::string_view call_id, std::string_view name,
                   std::string_view arguments) {
  json::object d = turn_step(turn, step);
  d["callId"] = call_id;
  d["name"] = name;
  d["arguments"] = arguments;
  return {"tool/call", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent tool_result(std::int64_t turn, std::int64_t step, std::string_view call_id, json::array content,
                     bool is_error, std::int64_t call_seq, std::optional<json::object> error,
                     std::optional<json::object> meta) {
  json::object d = turn_step(turn, step);
  d["callId"] = call_id;
  d["content"] = std::move(content);
  d["isError"] = is_error;
  if (error) d["error"] = std::move(*error);
  if (meta) d["meta"] = std::move(*meta);
  return {"tool/result", std::move(d), json::value("append"), json::array{call_seq}, std::nullopt};
}

NewEvent todo_write(json::array todos) {
  json::object d;
  d["todos"] = std::move(todos);
  return {"todo/write", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent approval_asked(std::string_view id, std::string_view tool, std::string_view call_id,
                        std::optional<std::string_view> reason) {
  json::object d;
  d["id"] = id;
  d["toolName"] = tool;
  d["callId"] = call_id;
  if (reason) d["reason"] = *reason;
  return {"approval/asked", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent approval_decided(std::string_view id, std::string_view outcome) {
  json::object d;
  d["id"] = id;
  d["outcome"] = outcome;
  return {"approval/decided", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent turn_end(std::int64_t turn, json::object r) {
  json::object d;
  d["turn"] = turn;
  d["reason"] = std::move(r);
  return {"turn/end", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent compact_turn_start(std::int64_t turn) {
  return message_turn_start(turn, json::object{{"kind", "plugin"}, {"plugin", "compact"}});
}

const char* const kCompactPreamble =
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up "
    "context. Treat the captured context as established background and build on it without restating it. Continue "
    "the task directly from the messages that follow, without acknowledging this checkpoint.";

NewEvent compact_start(std::int64_t turn) {
  json::object d;
  d["turn"] = turn;
  return {"compact/start", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent compact_summary(json::array summary, std::int64_t start, std::int64_t end, json::array shadowed_seqs,
                         std::int64_t shadowed_tokens, std::string_view provider, std::string_view model,
                         std::optional<std::int64_t> max_tokens) {
  json::object range;
  range["start"] = start;
  range["end"] = end;
  json::object d;
  d["summary"] = std::move(summary);
  d["shadowedRange"] = std::move(range);
  d["shadowedSeqs"] = std::move(shadowed_seqs);
  d["shadowedTokenCount"] = shadowed_tokens;
  d["provider"] = provider;
  d["model"] = model;
  if (max_tokens) d["maxTokens"] = *max_tokens;
  return {"compact/summary", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

NewEvent compact_checkpoint(const json::array& summary, std::int64_t start_seq, std::int64_t summary_seq,
                            const json::array& shadowed_seqs) {
  auto text = [](std::string t) {
    json::object block;
    block["type"] = "text";
    block["text"] = std::move(t);
    return block;
  };
  json::array content;
  content.push_back(text(std::string(kCompactPreamble) + "\n\n<compacted-summary>"));
  for (const auto& block : summary) content.push_back(block);
  content.push_back(text("</compacted-summary>"));
  json::object source;
  source["kind"] = "plugin";
  source["plugin"] = "compact";
  json::array seqs{start_seq, summary_seq};
  for (const auto& s : shadowed_seqs) seqs.push_back(s);
  json::object op;
  op["op"] = "replace";
  op["start"] = shadowed_seqs.front();
  op["end"] = shadowed_seqs.back();
  NewEvent e = user_message(std::move(content), std::move(source), std::move(seqs));
  e.surfaceOp = std::move(op);
  return e;
}

NewEvent compact_end(std::int64_t turn, std::optional<std::string_view> error) {
  json::object d;
  d["turn"] = turn;
  if (error) d["error"] = *error;
  return {"compact/end", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

json::object reason(std::string_view kind) {
  json::object r;
  r["kind"] = kind;
  return r;
}

json::object error_reason(std::int64_t step, std::string_view message, std::optional<std::string_view> code) {
  json::object r;
  r["kind"] = "error";
  r["step"] = step;
  r["message"] = message;
  if (code) r["code"] = *code;
  return r;
}

} // namespace acp::store::events
