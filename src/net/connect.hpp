// A client connection to an Endpoint: resolved, connected and (for https) through the TLS handshake
// with the peer's certificate verified against its name or IP. Shared by the model provider and MCP
// servers over HTTP; what a failure means to each (retry or not, its wording) is theirs.
//
// One deadline covers the three steps. Cancellation is the awaiting coroutine's slot: Asio 1.81's
// resolver ignores per-operation cancellation, so both the slot and the deadline are bridged to
// resolver.cancel(). The caller keeps throw_if_cancelled off; a cancelled connect returns a failure
// of kind `cancelled`.
#pragma once

#include "net/endpoint.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace acp::net {

using TcpStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

enum class ConnectStage { resolve, connect, tls };
enum class ConnectFailureKind { cancelled, timeout, failed, certificate };

struct ConnectFailure {
  ConnectStage stage;
  ConnectFailureKind kind;
  std::string detail;  ///< the system's or OpenSSL's words (empty for cancelled and timeout)
};

struct Connection {
  std::variant<std::monostate, TcpStream, TlsStream> stream;  ///< monostate when `failure` is set
  std::optional<ConnectFailure> failure;

  TcpStream& lowest();
};

/// Connects to `to` by `deadline`; `tls` is required for an https endpoint.
boost::asio::awaitable<Connection> connect(boost::asio::any_io_executor executor, const Endpoint& to,
                                           std::chrono::steady_clock::time_point deadline,
                                           boost::asio::ssl::context* tls);

/// `failure` in words naming `to` ("cannot connect to 127.0.0.1:8080: Connection refused").
std::string describe(const ConnectFailure& failure, const Endpoint& to);

/// A TLS client context: TLS 1.2 or later, peers verified against the system's CAs, or against
/// `ca_file` as well when given. Throws std::runtime_error when `ca_file` cannot be loaded.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const std::string& ca_file = {});

} // namespace acp::net
