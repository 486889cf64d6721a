// The typed method table (clangd's LSPBinder): decodes params into the handler's own parameter
// type, runs it, and encodes its result. Decode failures become -32602 with the JSON Pointer of the
// bad field. Reply discipline (exactly one answer per request) is the connection's job: it replies
// from the returned value or the thrown error.
#pragma once

#include "handlers/handler_context.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/wire.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <memory>
#include <map>
#include <string>

namespace acp::handlers {

class Router {
public:
  // Params are taken by value: the connection moves them in, and they are released once decoded.
  // `turn`: a session/prompt's cancellation object, made by the connection when the request
  // arrived ($/cancel_request finds it there); null for every other method.
  using RequestFn = std::function<boost::asio::awaitable<boost::json::value>(HandlerContext&, boost::json::value,
                                                                            std::shared_ptr<engine::Turn> turn)>;
  using NotificationFn = std::function<boost::asio::awaitable<void>(HandlerContext&, boost::json::value)>;

  template <class Params, class Result>
  void bind(std::string_view method, boost::asio::awaitable<Result> (*fn)(HandlerContext&, Params)) {
    requests_[std::string(method)] = [fn](HandlerContext& ctx, boost::json::value params, std::shared_ptr<engine::Turn>) {
      return call<Params, Result>(fn, ctx, std::move(params));
    };
  }
  /// A method that takes the request's cancellation object (session/prompt).
  template <class Params, class Result>
  void bind(std::string_view method,
            boost::asio::awaitable<Result> (*fn)(HandlerContext&, Params, std::shared_ptr<engine::Turn>)) {
    requests_[std::string(method)] = [fn](HandlerContext& ctx, boost::json::value params,
                                          std::shared_ptr<engine::Turn> turn) {
      return call_with_turn<Params, Result>(fn, ctx, std::move(params), std::move(turn));
    };
  }

  template <class Params>
  void bind_notification(std::string_view method, boost::asio::awaitable<void> (*fn)(HandlerContext&, Params)) {
    notifications_[std::string(method)] = [fn](HandlerContext& ctx, boost::json::value params) {
      return notify<Params>(fn, ctx, std::move(params));
    };
  }

  const RequestFn* find_request(const std::string& method) const {
    auto it = requests_.find(method);
    return it == requests_.end() ? nullptr : &it->second;
  }
  const NotificationFn* find_notification(const std::string& method) const {
    auto it = notifications_.find(method);
    return it == notifications_.end() ? nullptr : &it->second;
  }

  template <class Params> static Params decode_params(const boost::json::value& params) {
    try {
      return wire::decode<Params>(params);
    } catch (const wire::DecodeError& e) {
      throw jsonrpc::invalid_params(e.pointer(), e.what());
    }
  }

private:
  template <class Params, class Result>
  static boost::asio::awaitable<boost::json::value> call(boost::asio::awaitable<Result> (*fn)(HandlerContext&, Params),
                                                         HandlerContext& ctx, boost::json::value params) {
    Params typed = decode_params<Params>(params);
    params = boost::json::value();  // the decoded copy is all the handler needs: free the parsed one now
    Result result = co_await fn(ctx, std::move(typed));
    co_return wire::encode(result);
  }

  template <class Params, class Result>
  static boost::asio::awaitable<boost::json::value> call_with_turn(
      boost::asio::awaitable<Result> (*fn)(HandlerContext&, Params, std::shared_ptr<engine::Turn>), HandlerContext& ctx,
      boost::json::value params, std::shared_ptr<engine::Turn> turn_in) {
    std::shared_ptr<engine::Turn> turn = std::move(turn_in);
    Params typed = decode_params<Params>(params);
    params = boost::json::value();
    auto running = fn(ctx, std::move(typed), std::move(turn));
    Result result = co_await std::move(running);
    co_return wire::encode(result);
  }

  template <class Params>
  static boost::asio::awaitable<void> notify(boost::asio::awaitable<void> (*fn)(HandlerContext&, Params),
                                             HandlerContext& ctx, boost::json::value params) {
    Params typed = decode_params<Params>(params);
    params = boost::json::value();
    co_await fn(ctx, std::move(typed));
  }

  std::map<std::string, RequestFn> requests_;
  std::map<std::string, NotificationFn> notifications_;
};

/// Fills the table with every method we implement (handlers/bindings.cpp).
void bind_all(Router& router);

/// Maps an exception escaping a handler to its JSON-RPC error; a jsonrpc::RpcError (a handler that
/// chose its error itself) passes through as it is.
jsonrpc::RpcError to_rpc_error(std::exception_ptr error);

} // namespace acp::handlers
