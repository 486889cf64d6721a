#include "jsonrpc.hpp"

#include "support/json_number.hpp"
#include "support/utf8.hpp"

#include <boost/json/serialize.hpp>

#include <cstdint>

namespace acp::jsonrpc {

namespace json = boost::json;

json::value id_to_json(const RequestId& id) {
  return std::visit([](const auto& v) -> json::value {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::nullptr_t>) return nullptr;
    else if constexpr (std::is_same_v<V, std::string>) return json::string(v);
    else return v;
  }, id);
}

std::string id_to_string(const RequestId& id) { return json::serialize(id_to_json(id)); }

json::object RpcError::to_json() const {
  json::object obj;
  obj["code"] = code_;
  obj["message"] = message_;
  if (data_) obj["data"] = *data_;
  return obj;
}

RpcError parse_error(std::string_view why) {
  return RpcError(code::parse_error, why.empty() ? "Parse error" : "Parse error: " + std::string(why));
}
RpcError invalid_request(std::string_view why) {
  return RpcError(code::invalid_request, why.empty() ? "Invalid request" : "Invalid request: " + std::string(why));
}
RpcError oversize_frame(std::uint64_t max_frame_bytes) {
  return RpcError(code::invalid_request, "Invalid request: frame exceeds " + std::to_string(max_frame_bytes) + " bytes",
                  json::object{{"maxFrameBytes", max_frame_bytes}});
}
RpcError not_initialized() { return RpcError(code::invalid_request, "Invalid request: initialize first"); }
RpcError method_not_found(std::string_view method) {
  return RpcError(code::method_not_found, "Method not found: " + std::string(method), json::object{{"method", method}});
}
RpcError invalid_params(std::string_view pointer, std::string_view why) {
  std::string where = pointer.empty() ? "params" : std::string(pointer);
  return RpcError(code::invalid_params, "Invalid params: " + where + ": " + std::string(why),
                  json::object{{"path", pointer}});
}
RpcError invalid_params_code(std::string_view code, std::string_view reason, std::string_view pointer) {
  json::object data{{"code", code}};
  if (!pointer.empty()) data["path"] = pointer;
  return RpcError(code::invalid_params, "Invalid params: " + std::string(reason), std::move(data));
}
RpcError resource_not_found(std::string_view session_id) {
  return RpcError(code::resource_not_found, "Resource not found: session " + json::serialize(json::string(session_id)),
                  json::object{{"sessionId", session_id}});
}
RpcError auth_required(std::string_view provider) {
  return RpcError(code::auth_required, "Authentication required", json::object{{"provider", provider}});
}
RpcError session_busy() {
  return RpcError(code::internal_error, "Session busy: another process is writing this session",
                  json::object{{"code", "SESSION_BUSY"}});
}
RpcError prompt_queue_full(std::string_view session_id, std::size_t waiting) {
  return RpcError(code::prompt_queue_full,
                  "Session busy: " + std::to_string(waiting) + " prompts already wait behind the running one",
                  json::object{{"reason", "busy"}, {"sessionId", session_id}, {"queued", waiting}});
}
RpcError prompt_budget_full(std::string_view session_id, std::size_t held, std::size_t limit) {
  return RpcError(code::prompt_queue_full,
                  "Server busy: prompts waiting or running in this connection's sessions hold " +
                      std::to_string(held) + " bytes (at most " + std::to_string(limit) + ")",
                  json::object{{"reason", "busy"}, {"sessionId", session_id}, {"heldBytes", held}, {"maxHeldBytes", limit}});
}
RpcError log_corrupt(std::string_view where_and_why) {
  return RpcError(code::internal_error, "Session log unreadable: " + std::string(where_and_why),
                  json::object{{"code", "SESSION_LOG_CORRUPT"}});
}
RpcError session_exists(std::string_view session_id) {
  return RpcError(code::internal_error, "Session exists: session " + json::serialize(json::string(session_id)) +
                                            " already has a log",
                  json::object{{"code", "SESSION_EXISTS"}, {"sessionId", session_id}});
}
RpcError write_refused(std::string_view why) {
  return RpcError(code::internal_error, "Session log write refused: " + std::string(why),
                  json::object{{"code", "SESSION_WRITE_REFUSED"}});
}
RpcError provider_failure(std::string_view code, std::string_view message, int http_status) {
  json::object data{{"code", code}};
  if (http_status) data["status"] = http_status;
  return RpcError(code::internal_error, std::string(message), std::move(data));
}
RpcError internal(std::string_view details) {
  return RpcError(code::internal_error, "Internal error", json::object{{"details", details}});
}

Inbound classify(json::value frame) {
  if (frame.is_array()) return Rejected{nullptr, invalid_request("batches are not supported")};
  auto* obj = frame.if_object();
  if (!obj) return Rejected{nullptr, invalid_request("a frame must be a JSON object")};

  const auto* id_value = obj->if_contains("id");
  // A response (result or error, no method) is never answered, whatever else is wrong with it:
  // answering a stray response could start an endless exchange with a peer that does the same.
  if (!obj->contains("method") && (obj->contains("result") || obj->contains("error"))) {
    Response r;
    r.id = id_value ? serialize(*id_value) : std::string();
    if (id_value && id_value->is_int64()) r.number = id_value->get_int64();
    if (auto* result = obj->if_contains("result")) r.result = std::move(*result);
    // Kept beside a result too: the reader refuses the pair rather than choose one.
    if (const json::value* error = obj->if_contains("error")) {
      const json::value& e = *error;
      const json::object* eo = e.if_object();
      const json::value* c = eo ? eo->if_contains("code") : nullptr;
      const json::value* m = eo ? eo->if_contains("message") : nullptr;
      std::optional<json::value> data;
      if (const json::value* d = eo ? eo->if_contains("data") : nullptr) data = *d;
      if (c && c->is_int64() && c->get_int64() >= INT32_MIN && c->get_int64() <= INT32_MAX && m && m->is_string())
        r.error = RpcError(static_cast<int>(c->get_int64()), std::string(m->get_string()), std::move(data));
      else
        r.error = RpcError(code::internal_error, "malformed error answer: " + serialize(e));
    }
    return r;
  }

  RequestId id = nullptr;
  if (id_value) {
    // An integer id is one written as an integer (no 1.0): it is echoed as the client spelt it.
    auto n = id_value->is_double() ? std::nullopt : support::json_integer(*id_value);
    if (n) id = *n;
    else if (id_value->is_string()) id = std::string(id_value->get_string());
    else if (!id_value->is_null()) return Rejected{nullptr, invalid_request("id must be an integer, a string or null")};
  }

  const auto* version = obj->if_contains("jsonrpc");
  if (!version || !version->is_string() || version->get_string() != "2.0")
    return Rejected{id, invalid_request("jsonrpc must be \"2.0\"")};

  const auto* method = obj->if_contains("method");
  if (!method) {
    Rejected missing{id, invalid_request("method is missing"), std::nullopt};
    if (std::get_if<std::int64_t>(&id) && !obj->contains("params") && obj->size() == 2)
      missing.as_response = Response{serialize(*id_value), std::get<std::int64_t>(id), std::nullopt, std::nullopt};
    return missing;
  }
  if (!method->is_string()) return Rejected{id, invalid_request("method must be a string")};

  json::value params = json::object{};
  if (auto* p = obj->if_contains("params")) {
    if (!p->is_object() && !p->is_array()) return Rejected{id, invalid_request("params must be an object or an array")};
    params = std::move(*p);  // moved, not copied: a prompt may be tens of megabytes
  }
  std::string name(method->get_string());
  if (!id_value) return Notification{std::move(name), std::move(params)};
  return Request{std::move(id), std::move(name), std::move(params)};
}

namespace {

// Every frame is JSON text whatever its strings came from. Text from outside is made valid where it
// enters; should some slip through, its bad bytes can only sit inside strings (the rest of a frame
// is ASCII), so replacing them with U+FFFD keeps the frame's meaning and makes it readable.
std::string frame_text(const json::object& frame) {
  std::string text = json::serialize(frame);
  support::replace_invalid_utf8(text);
  return text;
}

} // namespace

std::string serialize_response(const RequestId& id, const json::value& result) {
  json::object obj;
  obj["jsonrpc"] = "2.0";
  obj["id"] = id_to_json(id);
  obj["result"] = result;
  return frame_text(obj);
}

std::string serialize_error(const RequestId& id, const RpcError& error) {
  json::object obj;
  obj["jsonrpc"] = "2.0";
  obj["id"] = id_to_json(id);
  obj["error"] = error.to_json();
  return frame_text(obj);
}

std::string serialize_request(std::int64_t id, std::string_view method, const json::value& params) {
  json::object obj;
  obj["jsonrpc"] = "2.0";
  obj["id"] = id;
  obj["method"] = method;
  obj["params"] = params;
  return frame_text(obj);
}

std::string serialize_notification(std::string_view method, const json::value& params) {
  json::object obj;
  obj["jsonrpc"] = "2.0";
  obj["method"] = method;
  obj["params"] = params;
  return frame_text(obj);
}

} // namespace acp::jsonrpc
