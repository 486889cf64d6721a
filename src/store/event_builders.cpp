#include "store/event_builders.hpp"

#include "store/title.hpp"

namespace acp::store::events {

namespace json = boost::json;

namespace {

json::object turn_step(std::int64_t turn, std::int64_t step) {
  json::object d;
  d["turn"] = turn;
  d["step"] = step;
  return d;
}

NewEvent delta(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t index, std::string_view text) {
  json::object chunk;
  chunk["type"] = kind;
  chunk["index"] = index;
  chunk["text"] = text;
  json::object d = turn_step(turn, step);
  d["chunk"] = std::move(chunk);
  return {"assistant/chunk", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}


} // namespace

NewEvent turn_start(std::int64_t turn) {
  json::object source;
  source["kind"] = "user";
  json::object trigger;
  trigger["kind"] = "message";
  trigger["source"] = std::move(source);
  json::object d;
  d["turn"] = turn;
  d["trigger"] = std::move(trigger);
  return {"turn/start", std::move(d), std::nullopt, std::nullopt, std::nullopt};
}

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

NewEvent turn_end(std::int64_t turn, json::object r) {
  json::object d;
  d["turn"] = turn;
  d["reason"] = std::move(r);
  return {"turn/end", std::move(d), std::nullopt, std::nullopt, std::nullopt};
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
