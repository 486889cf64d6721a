#include "store/event_model.hpp"

#include "store/records.hpp"
#include "support/hex.hpp"
#include "support/log.hpp"

#include <boost/json/array.hpp>


#include <array>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>

namespace acp::store {

namespace json = boost::json;

namespace {

json::object* object_in(json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

// Copies the listed keys of `from` that are present, in this order.
void copy_keys(json::object& to, const json::object& from, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (const auto* v = from.if_contains(k)) to.emplace(k, *v);
}

// 0.1.1 assistant/message: data{turn, step, message{role, content, source{kind:"model", provider,
// model, …}, id}, [interrupted], [usage]}.
void normalise_assistant(json::object& data) {
  json::object* msg = object_in(data, "message");
  if (!msg || data.contains("content")) return;
  json::value* content = msg->if_contains("content");
  if (!content) return;
  json::object out(data.storage());
  out.reserve(data.size() + 3);
  json::value id;
  for (auto& kv : data) {
    if (kv.key() != "message") {
      out.emplace(kv.key(), std::move(kv.value()));
      continue;
    }
    out.emplace("content", std::move(*content));
    json::object provenance(data.storage());
    if (json::object* source = object_in(*msg, "source"))
      for (auto& s : *source)
        if (s.key() != "kind") provenance.emplace(s.key(), std::move(s.value()));
    out.emplace("provenance", std::move(provenance));
    if (json::value* v = msg->if_contains("id")) id = std::move(*v);
  }
  if (!id.is_null()) out.emplace("id", std::move(id));
  data = std::move(out);
}

// 0.1.1 tool/result: data{turn, step, message{source{kind:"tool", callId}, content:[{type:
// "tool-result", toolCallId, content, isError}], role, id}, [error], [meta]}.
void normalise_tool_result(json::object& data) {
  json::object* msg = object_in(data, "message");
  if (!msg || data.contains("content")) return;
  json::value* blocks = msg->if_contains("content");
  json::array* arr = blocks ? blocks->if_array() : nullptr;
  json::object* block = arr && arr->size() == 1 ? (*arr)[0].if_object() : nullptr;
  if (!block || string_at(*block, "type") != "tool-result") return;
  json::object out(data.storage());
  out.reserve(data.size() + 4);
  json::value id;
  for (auto& kv : data) {
    if (kv.key() != "message") {
      out.emplace(kv.key(), std::move(kv.value()));
      continue;
    }
    json::value call_id;
    if (json::value* v = block->if_contains("toolCallId")) call_id = std::move(*v);
    else if (json::object* source = object_in(*msg, "source"); source && source->contains("callId"))
      call_id = std::move(source->at("callId"));
    out.emplace("callId", std::move(call_id));
    if (json::value* v = block->if_contains("content")) out.emplace("content", std::move(*v));
    if (json::value* v = block->if_contains("isError")) out.emplace("isError", std::move(*v));
    if (json::value* v = msg->if_contains("id")) id = std::move(*v);
  }
  if (!id.is_null()) out.emplace("id", std::move(id));
  data = std::move(out);
}

// 0.1.1 error reason {kind:"error", error:{message, code, …}} -> {kind:"error", failure:{…}}.
void normalise_turn_end(json::object& data) {
  json::object* reason = object_in(data, "reason");
  if (!reason || string_at(*reason, "kind") != "error" || reason->contains("failure")) return;
  json::value* error = reason->if_contains("error");
  if (!error || !error->is_object()) return;
  json::object out(reason->storage());
  out.reserve(reason->size());
  for (auto& kv : *reason) out.emplace(kv.key() == "error" ? json::string_view("failure") : kv.key(), std::move(kv.value()));
  *reason = std::move(out);
}

constexpr std::array<std::string_view, 53> kKnownTypes = {
    // 0.1.1's KNOWN_SESSION_EVENT_TYPES (docs/store-format.md#release-011-shapes)
    "agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided", "approval/policy",
    "assistant/chunk", "assistant/message", "command/done", "command/run", "compaction/end", "compaction/prune",
    "compaction/start", "compaction/summary", "feedback/record", "goal/change", "hook/invoked", "hook/result",
    "llm/retry", "llm/retry-started", "permission/preset", "plan/mode", "request/context", "request/header",
    "sandbox/mode", "schedule/change", "session/end-seed", "session/title", "session/title-llm-request", "step/end",
    "step/start", "subagent/descriptor", "team/member", "team/message/delivered", "team/message/queued", "team/task",
    "todo/write", "tool-workflow/agent-end", "tool-workflow/agent-start", "tool-workflow/run-end",
    "tool-workflow/run-start", "tool/call", "tool/code-dispatch", "tool/code-dispatch-start", "tool/result",
    "turn/end", "turn/start", "user/message", "web/deepseek-search-llm-request",
    // 45fc (docs/store-format.md#event-types): migrated by 0.1.1, read and written by us
    "steering/message", "compact/start", "compact/summary", "compact/end", "prompt/blocked"};

std::string_view renamed_compaction(std::string_view type) {
  if (type == "compaction/start") return "compact/start";
  if (type == "compaction/summary") return "compact/summary";
  if (type == "compaction/end") return "compact/end";
  return {};
}

} // namespace

// Types of our own (`dsh-acp/…`, written marked ignorable): known here even where an older release
// wrote them without the marker (45fc logs before it was written there too).
constexpr std::array<std::string_view, 3> kOwnTypes = {"dsh-acp/permission-rule", "dsh-acp/mode", "dsh-acp/fork"};

bool is_known_event_type(std::string_view type) {
  for (auto t : kKnownTypes)
    if (t == type) return true;
  for (auto t : kOwnTypes)
    if (t == type) return true;
  return false;
}

bool normalise_event(json::object& event) {
  std::string_view type = string_member(event, 0, "type");
  // The common lines (chunks, boundaries) are already normalised: decide on the type first.
  if (type == "assistant/chunk" || type == "turn/start" || type == "step/start" || type == "step/end" ||
      type == "user/message" || type == "tool/call")
    return false;
  json::object* data = object_in(event, "data");
  if (data) {
    if (type == "assistant/message") normalise_assistant(*data);
    else if (type == "tool/result") normalise_tool_result(*data);
    else if (type == "turn/end") normalise_turn_end(*data);
    else if (auto renamed = renamed_compaction(type); !renamed.empty()) {
      event["type"] = renamed;
      return false;
    }
  }
  if (is_known_event_type(type)) return false;
  const json::value* ignorable = event.if_contains("ignorable");
  return !(ignorable && ignorable->is_bool() && ignorable->get_bool());
}

void note_unknown_event_type(std::string_view type, const std::string& path) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> seen;
  {
    std::lock_guard g(mu);
    if (seen.size() >= 1024 || !seen.emplace(type).second) return;  // bounded: a hostile log cannot grow it
  }
  log::warn("session log " + path + " holds events of the unknown type \"" + std::string(type) +
            "\" (not marked ignorable): they are kept in the log and shown nowhere");
}

std::string random_uuid() {
  unsigned char b[16];
  ::arc4random_buf(b, sizeof b);  // the kernel's CSPRNG (getrandom); never fails
  b[6] = (b[6] & 0x0F) | 0x40;  // version 4
  b[8] = (b[8] & 0x3F) | 0x80;  // RFC 4122 variant
  std::string hex = support::hex_encode(std::string_view(reinterpret_cast<const char*>(b), sizeof b));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20);
}

void assign_v01_ids(json::object& record, std::string& compaction_id) {
  std::string_view type = string_at(record, "type");
  json::object* data = object_in(record, "data");
  if (!data) return;
  if (type == "user/message" || type == "assistant/message" || type == "tool/result" || type == "steering/message") {
    if (!data->contains("id")) data->emplace("id", random_uuid());
    json::object* source = object_in(*data, "source");
    if (source && string_at(*source, "kind") == "plugin" && string_at(*source, "plugin") == "compact" &&
        !source->contains("compactionId") && !compaction_id.empty())
      source->emplace("compactionId", compaction_id);
    return;
  }
  if (type == "compact/start" && !data->contains("compactionId")) {
    compaction_id = random_uuid();
    data->emplace("compactionId", compaction_id);
  } else if ((type == "compact/summary" || type == "compact/end") && !data->contains("compactionId")) {
    if (compaction_id.empty()) compaction_id = random_uuid();  // a start we never saw: still one id
    data->emplace("compactionId", compaction_id);
  }
  if (type == "compact/end") compaction_id.clear();
}

namespace {

json::object v01_reason(const json::object& reason) {
  std::string_view kind = string_at(reason, "kind");
  if (kind == "aborted") {
    json::object r{{"kind", "aborted"}};
    if (const auto* why = reason.if_contains("reason"); why && why->is_object()) r.emplace("reason", *why);
    else r.emplace("reason", json::object{{"kind", "user"}});
    return r;
  }
  if (kind == "error") {
    json::object error;
    if (const json::object* failure = object_at(reason, "failure")) {
      error = *failure;
    } else if (const json::object* e = object_at(reason, "error")) {
      error = *e;
    } else {
      error.emplace("message", string_at(reason, "message"));
      std::string_view code = string_at(reason, "code");
      error.emplace("code", code.empty() ? std::string_view("UNKNOWN") : code);
    }
    return json::object{{"kind", "error"}, {"error", std::move(error)}};
  }
  if (kind == "disposed") return json::object{{"kind", "aborted"}, {"reason", json::object{{"kind", "disposed"}}}};
  return json::object{{"kind", kind}};
}

json::object v01_source(const json::object& source) {
  if (string_at(source, "kind") != "session-reference" || source.contains("form")) return source;
  json::object s;
  s.reserve(source.size() + 1);
  s.emplace("kind", "session-reference");
  s.emplace("form", "recall");
  for (const auto& kv : source)
    if (kv.key() != "kind") s.emplace(kv.key(), kv.value());
  return s;
}

json::object v01_user(const json::object& d) {
  json::object out;
  out.reserve(4);
  const json::object* source = object_at(d, "source");
  const bool recall = source && string_at(*source, "kind") == "session-reference";
  auto put_source = [&] {
    if (source) out.emplace("source", v01_source(*source));
  };
  if (recall) put_source();  // the recall message's producer order (docs/store-format.md#release-011-shapes)
  if (const auto* c = d.if_contains("content")) out.emplace("content", *c);
  if (!recall) put_source();
  out.emplace("role", "user");
  copy_keys(out, d, {"id"});
  return out;
}

json::object v01_assistant(const json::object& d) {
  json::object source{{"kind", "model"}};
  if (const json::object* p = object_at(d, "provenance"))
    for (const auto& kv : *p) source.emplace(kv.key(), kv.value());
  json::object message;
  message.reserve(4);
  message.emplace("role", "assistant");
  message.emplace("content", d.contains("content") ? d.at("content") : json::value(json::array{}));
  message.emplace("source", std::move(source));
  copy_keys(message, d, {"id"});
  json::object out;
  copy_keys(out, d, {"turn", "step"});
  out.emplace("message", std::move(message));
  copy_keys(out, d, {"interrupted", "usage"});
  return out;
}

json::object v01_tool_result(const json::object& d, bool closer, std::int64_t seq) {
  const std::string_view call_id = string_at(d, "callId");
  json::object block;
  block.emplace("type", "tool-result");
  block.emplace("toolCallId", call_id);
  const json::value content = d.contains("content") ? d.at("content") : json::value(json::array{});
  const json::value is_error = d.contains("isError") ? d.at("isError") : json::value(false);
  json::object message;
  if (closer) {
    // repair.ts's own order: isError before content, id/role/source/content.
    block.emplace("isError", is_error);
    block.emplace("content", content);
    message.emplace("id", "interrupted-tool-result-" + std::string(call_id) + "-" + std::to_string(seq));
    message.emplace("role", "user");
    message.emplace("source", json::object{{"kind", "tool"}, {"callId", call_id}});
    message.emplace("content", json::array{std::move(block)});
  } else {
    block.emplace("content", content);
    block.emplace("isError", is_error);
    message.emplace("source", json::object{{"kind", "tool"}, {"callId", call_id}});
    message.emplace("content", json::array{std::move(block)});
    message.emplace("role", "user");
    copy_keys(message, d, {"id"});
  }
  json::object out;
  copy_keys(out, d, {"turn", "step"});
  out.emplace("message", std::move(message));
  copy_keys(out, d, {"error", "meta"});
  return out;
}

} // namespace

std::optional<json::object> to_v01_record(const json::object& record, bool closer) {
  std::string_view type = string_at(record, "type");
  const json::object* data = object_at(record, "data");
  if (!data) return std::nullopt;
  const auto* seq_v = record.if_contains("seq");
  const std::int64_t seq = seq_v ? safe_int(*seq_v).value_or(0) : 0;
  std::string_view out_type = type;
  json::object d;
  if (type == "turn/start") {
    copy_keys(d, *data, {"turn"});
  } else if (type == "turn/end") {
    copy_keys(d, *data, {"turn"});
    const json::object* reason = object_at(*data, "reason");
    d.emplace("reason", reason ? v01_reason(*reason) : json::object{{"kind", "completed"}});
  } else if (type == "user/message" || type == "steering/message") {
    out_type = "user/message";  // 0.1.1 never writes steering (docs/store-format.md#release-011-shapes)
    d = v01_user(*data);
  } else if (type == "assistant/message") {
    d = v01_assistant(*data);
  } else if (type == "tool/result") {
    d = v01_tool_result(*data, closer, seq);
  } else if (type == "compact/start") {
    out_type = "compaction/start";
    copy_keys(d, *data, {"compactionId", "sourceCommandId", "turn"});
  } else if (type == "compact/summary") {
    out_type = "compaction/summary";
    copy_keys(d, *data, {"compactionId", "sourceCommandId", "summary", "rawOutput", "llmStreamCall", "shadowedRange",
                         "shadowedSeqs", "shadowedTokenCount", "provider", "model", "maxTokens", "usage"});
  } else if (type == "compact/end") {
    out_type = "compaction/end";
    copy_keys(d, *data, {"compactionId", "sourceCommandId", "turn", "error"});
  } else {
    return std::nullopt;
  }
  json::object out;
  out.reserve(6);
  out.emplace("type", out_type);
  copy_keys(out, record, {"seq", "time"});
  out.emplace("data", std::move(d));
  if (closer) copy_keys(out, record, {"surfaceOp", "sourceEventSeqs"});
  else copy_keys(out, record, {"sourceEventSeqs", "surfaceOp"});
  copy_keys(out, record, {"ignorable"});
  return out;
}

} // namespace acp::store
