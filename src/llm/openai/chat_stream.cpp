#include "llm/openai/chat_stream.hpp"

#include "support/json_number.hpp"
#include "support/json_text.hpp"
#include "support/utf8.hpp"

#include <boost/json/value.hpp>

#include <limits>

namespace acp::llm {

namespace {

namespace json = boost::json;

const json::value* find(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->value();
}

std::optional<std::int64_t> int_at(const json::object& o, std::string_view key) {
  const auto* v = find(o, key);
  if (!v)
    return std::nullopt;
  return support::json_integer(*v);  // a count that is not an integer int64 holds is no count
}

const json::object* object_at(const json::object& o, std::string_view key) {
  const auto* v = find(o, key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

void append_text(const json::object& delta, std::string_view key, DeltaKind kind, std::vector<Delta>& out) {
  const auto* v = find(delta, key);
  if (v && v->is_string() && !v->get_string().empty())
    out.push_back(Delta{kind, std::string(v->get_string())});
}

Usage read_usage(const json::object& u) {
  Usage usage;
  usage.input_tokens = int_at(u, "prompt_tokens").value_or(0);
  usage.output_tokens = int_at(u, "completion_tokens").value_or(0);
  if (auto hit = int_at(u, "prompt_cache_hit_tokens"))
    usage.cached_input_tokens = hit;
  else if (const auto* d = object_at(u, "prompt_tokens_details"))
    usage.cached_input_tokens = int_at(*d, "cached_tokens");
  if (const auto* d = object_at(u, "completion_tokens_details"))
    usage.reasoning_tokens = int_at(*d, "reasoning_tokens");
  return usage;
}

[[noreturn]] void protocol_error(std::string what, std::string_view data) {
  constexpr std::size_t kShown = 200;
  std::string shown(data.substr(0, kShown));
  if (data.size() > kShown)
    shown += "…";
  throw ProviderError("PROVIDER_UNAVAILABLE", "malformed event in the provider's stream (" + what + "): " + shown,
                      200);
}

} // namespace

std::optional<StopKind> map_finish_reason(std::string_view reason) {
  if (reason == "length")
    return StopKind::max_tokens;
  if (reason == "content_filter")
    return StopKind::refusal;
  if (reason == "insufficient_system_resource")
    return std::nullopt;
  return StopKind::end_turn;  // stop, tool_calls, function_call, eos (llama.cpp) …
}

void ChatStreamDecoder::on_data(std::string_view data, std::vector<Delta>& out) {
  // Bytes that are not UTF-8 can only sit inside the event's strings: they are read as U+FFFD
  // rather than failing the turn (or reaching the log raw).
  std::string text_data;
  if (!support::valid_utf8(data)) {
    text_data = support::valid_utf8_text(data);
    data = text_data;
  }
  boost::system::error_code ec;
  json::value v = support::parse_json(data, ec);
  if (ec)
    protocol_error(ec.message(), data);
  if (!v.is_object())
    protocol_error("not a JSON object", data);
  const auto& chunk = v.get_object();

  // Some servers report failures inside a 200 stream instead of with a status.
  if (const auto* err = find(chunk, "error"); err && !err->is_null()) {
    std::string message = "the provider reported an error in the stream";
    if (err->is_string())
      message = err->get_string();
    else if (err->is_object())
      if (const auto* m = find(err->get_object(), "message"); m && m->is_string())
        message = m->get_string();
    throw ProviderError("PROVIDER_UNAVAILABLE", message, 200);
  }

  if (const auto* m = find(chunk, "model"); m && m->is_string() && served_model_.empty())
    served_model_ = m->get_string();

  if (const auto* choices = find(chunk, "choices"); choices && !choices->is_null()) {
    if (!choices->is_array())
      protocol_error("choices is not an array", data);
    for (const auto& c : choices->get_array()) {
      if (!c.is_object())
        protocol_error("a choice is not an object", data);
      const auto& choice = c.get_object();
      if (auto idx = int_at(choice, "index"); idx && *idx != 0)
        continue;  // we ask for one choice; ignore any other
      if (const auto* delta = object_at(choice, "delta")) {
        append_text(*delta, "reasoning_content", DeltaKind::reasoning, out);
        append_text(*delta, "reasoning", DeltaKind::reasoning, out);
        append_text(*delta, "content", DeltaKind::text, out);
        if (const auto* calls = find(*delta, "tool_calls"); calls && !calls->is_null()) {
          if (!calls->is_array()) protocol_error("tool_calls is not an array", data);
          on_tool_calls(calls->get_array(), data, out);
        }
      }
      if (const auto* fr = find(choice, "finish_reason"); fr && fr->is_string()) {
        auto stop = map_finish_reason(fr->get_string());
        if (!stop)
          throw ProviderError("PROVIDER_UNAVAILABLE",
                              "the provider stopped early: " + std::string(fr->get_string()), 200);
        stop_ = stop;
      }
    }
  }

  if (const auto* u = object_at(chunk, "usage"))
    usage_ = read_usage(*u);
}

void ChatStreamDecoder::on_tool_calls(const json::array& calls, std::string_view data, std::vector<Delta>& out) {
  for (const auto& c : calls) {
    const auto* call = c.if_object();
    if (!call) protocol_error("a tool call is not an object", data);
    // `index` orders the calls; servers that omit it send one call per fragment run, in order.
    std::size_t index = calls_.empty() ? 0 : calls_.size() - 1;
    if (auto i = int_at(*call, "index")) {
      if (*i < 0 || static_cast<std::size_t>(*i) >= kMaxToolCalls) protocol_error("tool call index out of range", data);
      index = static_cast<std::size_t>(*i);
    }
    const json::object* function = object_at(*call, "function");
    auto string_in = [](const json::object* o, std::string_view key) -> std::string_view {
      const auto* v = o ? find(*o, key) : nullptr;
      return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
    };
    std::string_view id = string_in(call, "id");
    std::string_view name = string_in(function, "name");
    std::string_view arguments = string_in(function, "arguments");
    // A call starts with its id (or, without an index, whenever a new id arrives).
    if (index >= calls_.size() || (!call->contains("index") && !id.empty() && !calls_.empty() && calls_.back().id != id)) {
      if (!call->contains("index")) index = calls_.size();
      if (index >= kMaxToolCalls) protocol_error("more than " + std::to_string(kMaxToolCalls) + " tool calls", data);
      if (index >= calls_.size()) calls_.resize(index + 1);
    }
    ToolCall& t = calls_[index];
    if (!id.empty() && t.id.empty()) t.id = id;
    if (!name.empty()) t.name += name;  // some servers stream the name in pieces too
    t.arguments += arguments;
    Delta d{DeltaKind::tool_call, std::string(arguments)};
    d.call_index = index;
    d.call_id = t.id;
    d.call_name = t.name;
    out.push_back(std::move(d));
  }
}

} // namespace acp::llm
