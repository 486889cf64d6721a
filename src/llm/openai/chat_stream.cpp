#include "llm/openai/chat_stream.hpp"

#include "support/json_number.hpp"
#include "support/json_text.hpp"

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

} // namespace acp::llm
