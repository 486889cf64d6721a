// One ACP connection over a transport (stdio in production, memory in tests).
//
// The reader loop frames input, classifies each frame and dispatches it; every request runs as its
// own coroutine so a long prompt never blocks initialize, other sessions or session/cancel. After
// each dispatch the reader yields once, so handlers start in frame order (a cancel that follows a
// prompt in the same read still finds that prompt running). Every request gets exactly one answer,
// built from the handler's return value or thrown error, queued on its session's stream (params
// .sessionId, or the sessionId of session/new's result; "" otherwise) so it follows every
// notification the request queued before it and precedes those queued after it.
//
// Backpressure: nothing is read while the outbox is full (transport/outbox.hpp).
// Shutdown (stdin EOF, stop(), the client's reader gone): running turns are cancelled and answered,
// in-flight requests finish, what is queued is written, then run() returns. All of it is bounded by
// a grace period: once it passes, undelivered frames are dropped and waiting producers (replays)
// are released, so run() returns within about 1.5 s even if the client never reads again.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>

namespace acp::support {
struct Config;
}
namespace acp::llm {
class Provider;
}
namespace acp::handlers {
class ProviderAuth;
}
namespace acp::engine {
class StoreHandle;
}
namespace acp::refs {
class SessionReferenceService;
}
namespace acp::transport {
class Transport;
class Outbox;
}

namespace acp::server {

class Connection {
public:
  /// `blocking` runs store I/O (a thread pool); `executor` is the connection's own single thread.
  /// The transport must outlive the connection.
  Connection(boost::asio::any_io_executor executor, boost::asio::any_io_executor blocking,
             transport::Transport& transport, const support::Config& config, llm::Provider& provider,
             engine::StoreHandle& store, const refs::SessionReferenceService& references,
             std::string system_prompt_template);
  ~Connection();

  /// Serves until input ends, stop() is called or the client's reader is gone, then shuts down.
  boost::asio::awaitable<void> run();
  /// Ends reading and starts the shutdown (signal handlers); frames not yet dispatched are dropped.
  void stop();
  /// The outbound queue (tests read its bound and high-water mark).
  const transport::Outbox& outbox() const;
  /// Gates session/new, load and prompt on the provider's key; answers authenticate. Call before run().
  void set_provider_auth(handlers::ProviderAuth& auth);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::server
