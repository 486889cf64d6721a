// A real HTTP/1.1 (optionally TLS) server on 127.0.0.1, port 0, scripted per connection.
//
// Each accepted connection reads one request (headers + Content-Length body), records it, then runs
// the next script of the list, which writes whatever bytes it likes with pauses in between: chunked SSE,
// broken framing, error statuses, an abrupt close. The server runs on its own thread and io_context, so
// the client under test sees real sockets and real scheduling. Used by llm_tests and bench_provider.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::llm::testing {

struct RecordedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
};

class ServerConn {
public:
  virtual ~ServerConn() = default;
  virtual const RecordedRequest& request() const = 0;
  /// Writes raw bytes; throws when the client has gone (the server records when).
  virtual boost::asio::awaitable<void> write(std::string_view bytes) = 0;
  virtual boost::asio::awaitable<void> sleep(std::chrono::milliseconds ms) = 0;

  /// 200 with `Content-Type: text/event-stream` and chunked transfer coding.
  boost::asio::awaitable<void> start_sse(std::string_view extra_headers = {});
  /// One HTTP chunk.
  boost::asio::awaitable<void> chunk(std::string_view data);
  /// The last chunk.
  boost::asio::awaitable<void> end_chunks();
  /// A complete response with Content-Length and a JSON content type.
  boost::asio::awaitable<void> respond(int status, std::string_view body, std::string_view extra_headers = {});
};

using Script = std::function<boost::asio::awaitable<void>(ServerConn&)>;

struct TlsFiles {
  std::string cert_chain;  ///< PEM: server certificate
  std::string key;         ///< PEM: its private key
};

class ScriptedServer {
public:
  using Clock = std::chrono::steady_clock;

  explicit ScriptedServer(std::vector<Script> scripts, std::optional<TlsFiles> tls = std::nullopt);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  unsigned short port() const;
  std::string base_url(std::string_view host = "127.0.0.1", std::string_view path = "/v1") const;
  /// Accepted TCP connections (including ones whose TLS handshake failed).
  int connections() const;
  /// Requests read so far, in arrival order.
  std::vector<RecordedRequest> requests() const;
  /// Connections whose TLS handshake failed on the server side (the client refused the certificate).
  int failed_handshakes() const;
  /// Blocks until a script's write first fails because the client closed the connection; its time.
  Clock::time_point wait_first_write_failure() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One SSE data event carrying a chat.completion.chunk with the given delta fields (JSON object text).
std::string sse_chunk_event(std::string_view delta_json, std::string_view finish_reason = {});

} // namespace acp::llm::testing
