#include "net/connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace acp::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
}

TcpStream& Connection::lowest() {
  if (auto* tls = std::get_if<TlsStream>(&stream)) return beast::get_lowest_layer(*tls);
  return std::get<TcpStream>(stream);
}

asio::awaitable<Connection> connect(asio::any_io_executor executor, const Endpoint& to,
                                    std::chrono::steady_clock::time_point deadline, ssl::context* tls) {
  const auto cs = co_await asio::this_coro::cancellation_state;
  auto cancel_requested = [&cs] { return cs.cancelled() != asio::cancellation_type::none; };
  Connection out;
  auto failed = [&out](ConnectStage stage, ConnectFailureKind kind, std::string detail = {}) {
    out.failure = ConnectFailure{stage, kind, std::move(detail)};
  };

  auto resolver = std::make_shared<tcp::resolver>(executor);
  asio::steady_timer watchdog(executor, deadline);
  watchdog.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver)](boost::system::error_code ec) {
    if (auto r = weak.lock(); r && !ec) r->cancel();
  });
  auto slot = cs.slot();
  if (slot.is_connected())
    slot.assign([weak = std::weak_ptr<tcp::resolver>(resolver)](asio::cancellation_type) {
      if (auto r = weak.lock()) r->cancel();
    });
  auto [rec, endpoints] = co_await resolver->async_resolve(to.host, to.port, use_tuple);
  if (slot.is_connected()) slot.clear();
  watchdog.cancel();
  if (cancel_requested()) failed(ConnectStage::resolve, ConnectFailureKind::cancelled);
  else if (rec == asio::error::operation_aborted) failed(ConnectStage::resolve, ConnectFailureKind::timeout);
  else if (rec) failed(ConnectStage::resolve, ConnectFailureKind::failed, rec.message());
  if (out.failure) co_return out;

  TcpStream tcp_stream(executor);
  tcp_stream.expires_at(deadline);
  auto [cec, connected] = co_await tcp_stream.async_connect(endpoints, use_tuple);
  (void)connected;
  if (cancel_requested()) failed(ConnectStage::connect, ConnectFailureKind::cancelled);
  else if (cec == beast::error::timeout) failed(ConnectStage::connect, ConnectFailureKind::timeout);
  else if (cec) failed(ConnectStage::connect, ConnectFailureKind::failed, cec.message());
  if (out.failure) co_return out;
  tcp_stream.socket().set_option(tcp::no_delay(true));

  if (!to.tls) {
    out.stream.emplace<TcpStream>(std::move(tcp_stream));
    co_return out;
  }
  TlsStream tls_stream(std::move(tcp_stream), *tls);
  SSL* handle = tls_stream.native_handle();
  if (is_ip_literal(to.host)) {
    // RFC 6066 forbids SNI for IP literals; the certificate must carry the address as an IP SAN.
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), to.host.c_str());
  } else {
    SSL_set_tlsext_host_name(handle, to.host.c_str());
    SSL_set_hostflags(handle, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(handle, to.host.c_str());
  }
  beast::get_lowest_layer(tls_stream).expires_at(deadline);
  auto [hec] = co_await tls_stream.async_handshake(ssl::stream_base::client, use_tuple);
  if (cancel_requested()) {
    failed(ConnectStage::tls, ConnectFailureKind::cancelled);
  } else if (hec) {
    long verify = SSL_get_verify_result(handle);
    if (verify != X509_V_OK) failed(ConnectStage::tls, ConnectFailureKind::certificate, X509_verify_cert_error_string(verify));
    else if (hec == beast::error::timeout) failed(ConnectStage::tls, ConnectFailureKind::timeout);
    else failed(ConnectStage::tls, ConnectFailureKind::failed, hec.message());
  }
  if (out.failure) co_return out;
  out.stream.emplace<TlsStream>(std::move(tls_stream));
  co_return out;
}

std::string describe(const ConnectFailure& f, const Endpoint& to) {
  const std::string& where = to.host_header;
  switch (f.kind) {
  case ConnectFailureKind::cancelled:
    return "connecting to " + where + " was cancelled";
  case ConnectFailureKind::certificate:
    return "TLS certificate of " + where + " rejected: " + f.detail;
  case ConnectFailureKind::timeout:
    return f.stage == ConnectStage::resolve ? "resolving " + to.host + " timed out"
           : f.stage == ConnectStage::connect ? "connecting to " + where + " timed out"
                                              : "TLS handshake with " + where + " timed out";
  case ConnectFailureKind::failed:
    break;
  }
  return f.stage == ConnectStage::resolve ? "cannot resolve " + to.host + ": " + f.detail
         : f.stage == ConnectStage::connect ? "cannot connect to " + where + ": " + f.detail
                                            : "TLS handshake with " + where + " failed: " + f.detail;
}

std::unique_ptr<ssl::context> make_tls_context(const std::string& ca_file) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_default_verify_paths();
  if (!ca_file.empty()) {
    boost::system::error_code ec;
    ctx->load_verify_file(ca_file, ec);
    if (ec) throw std::runtime_error("cannot load CA file " + ca_file + ": " + ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

} // namespace acp::net
