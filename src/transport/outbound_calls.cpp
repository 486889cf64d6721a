#include "transport/outbound_calls.hpp"

#include "support/log.hpp"

#include "support/event.hpp"

#include <boost/json/object.hpp>

#include <optional>

namespace acp::transport {

namespace asio = boost::asio;
namespace json = boost::json;

struct OutboundCalls::Pending {
  Pending(asio::any_io_executor ex, std::string method) : answered(std::move(ex)), method(std::move(method)) {}
  support::Event answered;
  std::string method;
  std::optional<json::value> result;
  std::optional<jsonrpc::RpcError> error;
  std::string aborted;
};

std::string OutboundCalls::acp_cancel_frame(std::int64_t id) {
  return jsonrpc::serialize_notification("$/cancel_request", json::object{{"requestId", id}});
}

OutboundCalls::OutboundCalls(asio::any_io_executor executor, Send send, CancelFrame cancel_frame, std::size_t max_pending)
    : executor_(std::move(executor)), send_(std::move(send)), cancel_frame_(std::move(cancel_frame)),
      max_pending_(max_pending) {}

OutboundCalls::~OutboundCalls() { close("the connection is gone"); }

asio::awaitable<json::value> OutboundCalls::call(std::string key, std::string method, json::value params) {
  if (!closed_.empty()) throw ClientCallAborted(closed_);
  if (pending_.size() >= max_pending_)
    throw ClientCallAborted(std::to_string(pending_.size()) + " requests to the peer are waiting for answers");
  const std::int64_t id = next_id_++;
  auto pending = std::make_shared<Pending>(executor_, method);
  pending_.emplace(id, pending);
  send_(key, jsonrpc::serialize_request(id, method, params));
  // Woken by an answer, an abort or cancellation; which one is read from `pending`.
  co_await pending->answered.wait();
  if (pending->result) co_return std::move(*pending->result);
  if (pending->error) throw ClientCallFailed(std::move(*pending->error));
  if (!pending->aborted.empty()) throw ClientCallAborted(pending->aborted);
  // Cancelled while waiting: withdraw the request (the client may still answer; that answer is
  // then ignored as late).
  pending_.erase(id);
  if (closed_.empty()) send_(key, cancel_frame_(id));
  throw ClientCallAborted(method + " was cancelled", true);
}

bool OutboundCalls::complete(jsonrpc::Response&& response) {
  // JSON-RPC 2.0 §5: exactly one of result and error. Anything else is no answer to act on (a
  // permission is never granted by a frame that also says it failed): the request fails.
  const bool both = response.result && response.error, neither = !response.result && !response.error;
  auto it = response.number ? pending_.find(*response.number) : pending_.end();
  if (it == pending_.end()) {
    if (!neither)  // a frame with neither was answered as an invalid request: it was no response
      log::info("ignoring a response frame (id " + (response.id.empty() ? std::string("absent") : response.id) +
                "): it matches no request of ours waiting for an answer");
    return false;
  }
  auto pending = std::move(it->second);
  pending_.erase(it);
  if (both || neither) {
    const std::string why = both ? "it holds both result and error" : "it holds neither result nor error";
    log::warn("invalid response frame (id " + response.id + ") to our " + pending->method + ": " + why +
              "; the request fails");
    pending->error = jsonrpc::invalid_request("invalid response: " + why);
  } else if (response.result) {
    pending->result = std::move(*response.result);
  } else {
    pending->error = std::move(*response.error);
  }
  pending->answered.set();
  return true;
}

void OutboundCalls::close(const std::string& why) {
  if (closed_.empty()) closed_ = why.empty() ? "the connection is closing" : why;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    p->aborted = closed_;
    p->answered.set();
  }
}

} // namespace acp::transport
