// The JSON-RPC 2.0 envelope: request ids, frame classification, error values and the error table
// (docs/decisions.md#errors-on-the-wire lists it). Pure functions over parsed JSON; no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace acp::jsonrpc {

/// Echoed back exactly as received: integer, string or null.
using RequestId = std::variant<std::nullptr_t, std::int64_t, std::string>;

boost::json::value id_to_json(const RequestId& id);
std::string id_to_string(const RequestId& id);

namespace code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int auth_required = -32000;
inline constexpr int resource_not_found = -32002;
/// A session/prompt refused because its session's queue is full (data.reason "busy").
inline constexpr int prompt_queue_full = -32010;
} // namespace code

/// A JSON-RPC error answer. Handlers throw it; the router turns it into the response.
class RpcError : public std::exception {
public:
  RpcError() = default;
  RpcError(int code, std::string message, std::optional<boost::json::value> data = std::nullopt)
      : code_(code), message_(std::move(message)), data_(std::move(data)) {}
  int code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const std::optional<boost::json::value>& data() const noexcept { return data_; }
  const char* what() const noexcept override { return message_.c_str(); }
  boost::json::object to_json() const;

private:
  int code_ = code::internal_error;
  std::string message_;
  std::optional<boost::json::value> data_;
};

// Factories for every row of the error table (docs/decisions.md#errors-on-the-wire).
RpcError parse_error(std::string_view why);
RpcError invalid_request(std::string_view why);
RpcError oversize_frame(std::uint64_t max_frame_bytes);
RpcError not_initialized();
RpcError method_not_found(std::string_view method);
RpcError invalid_params(std::string_view pointer, std::string_view why);
/// `pointer` (when not empty) goes to data.path beside data.code.
RpcError invalid_params_code(std::string_view code, std::string_view reason, std::string_view pointer = {});
RpcError resource_not_found(std::string_view session_id);
RpcError auth_required(std::string_view provider);
RpcError session_busy();
/// `waiting` prompts already wait behind the session's running turn.
RpcError prompt_queue_full(std::string_view session_id, std::size_t waiting);
/// The connection's prompts, waiting or running in any session, already hold `held` of `limit` bytes.
RpcError prompt_budget_full(std::string_view session_id, std::size_t held, std::size_t limit);
RpcError log_corrupt(std::string_view where_and_why);
/// A new session's id already has a log (another process created it first).
RpcError session_exists(std::string_view session_id);
/// The store refused a batch of the session's log as malformed; nothing of it was written.
RpcError write_refused(std::string_view why);
RpcError provider_failure(std::string_view code, std::string_view message, int http_status);
RpcError internal(std::string_view details);

/// One classified inbound frame.
struct Request {
  RequestId id;
  std::string method;
  boost::json::value params;  ///< an object (absent params read as {}) or whatever the client sent
};
struct Notification {
  std::string method;
  boost::json::value params;
};
struct Response {    ///< a reply to a request we sent (agent -> client)
  std::string id;    ///< JSON text of its id (empty when it has none), for the log
  std::optional<std::int64_t> number;        ///< the id, when it is an integer (ours always are)
  std::optional<boost::json::value> result;  ///< set when it holds `result`
  std::optional<RpcError> error;             ///< set when it holds `error` (a malformed one reads as -32603)
  // Both set, or neither: not a valid response (JSON-RPC 2.0 §5: exactly one of them).
};
struct Rejected {    ///< answer with `error`; `id` is null unless it could be read
  RequestId id;
  RpcError error;
  /// A frame with an integer id and nothing but `jsonrpc` besides: it may be a response to that
  /// request of ours with neither result nor error, which must end the request (as a failure).
  std::optional<Response> as_response = std::nullopt;
};
using Inbound = std::variant<Request, Notification, Response, Rejected>;

/// Classifies a parsed frame (JSON-RPC §4, §5; batches are rejected: ACP has none).
Inbound classify(boost::json::value frame);

std::string serialize_response(const RequestId& id, const boost::json::value& result);
std::string serialize_error(const RequestId& id, const RpcError& error);
std::string serialize_notification(std::string_view method, const boost::json::value& params);
std::string serialize_request(std::int64_t id, std::string_view method, const boost::json::value& params);

} // namespace acp::jsonrpc
