// One ACP connection over a pair of file descriptors (stdin/stdout in production).
//
// The reader loop frames input, classifies each frame and dispatches it; every request runs as its
// own coroutine so a long prompt never blocks initialize, other sessions or session/cancel. After
// each dispatch the reader yields once, so handlers start in frame order (a cancel that follows a
// prompt in the same read still finds that prompt running). Every request gets exactly one answer,
// built from the handler's return value or thrown error. Shutdown (EOF, stop()) cancels running
// turns, waits for their answers, drains the outbox and returns.
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

namespace acp::server {

class Connection {
public:
  /// `blocking` runs store I/O (a thread pool); `executor` is the connection's own single thread.
  Connection(boost::asio::any_io_executor executor, boost::asio::any_io_executor blocking, int in_fd, int out_fd,
             const support::Config& config, llm::Provider& provider, engine::StoreHandle& store,
             const refs::SessionReferenceService& references, std::string system_prompt_template);
  ~Connection();

  /// Serves until input ends or stop() is called, then shuts down gracefully.
  boost::asio::awaitable<void> run();
  /// Ends reading (signal handlers); run() then shuts down as on EOF.
  void stop();
  /// Gates session/new, load and prompt on the provider's key; answers authenticate. Call before run().
  void set_provider_auth(handlers::ProviderAuth& auth);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::server
