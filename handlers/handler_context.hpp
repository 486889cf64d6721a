// What a handler may touch: configuration, the model provider, this connection's sessions, and the
// notification sink (the outbox). Handlers never see JSON-RPC ids, frames or file descriptors.
// Everything here is used on the connection's executor only.
#pragma once

#include "llm/provider.hpp"
#include "protocol/types/updates.hpp"
#include "store/session_types.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::store {
class SessionStore;
}
namespace acp::refs {
class SessionReferenceService;
}

namespace acp::handlers {

class ProviderAuth;

/// The running prompt of a session; session/cancel reaches it through `signal`.
struct Turn {
  boost::asio::cancellation_signal signal;
  std::stop_source stop;  ///< reaches reference preparation, which runs on threads of its own
  bool cancel_requested = false;

  void cancel() {
    cancel_requested = true;
    stop.request_stop();
    signal.emit(boost::asio::cancellation_type::terminal);
  }
};

/// A session attached to this connection (created, loaded or resumed here).
struct SessionState {
  std::string id;
  std::string cwd;
  store::SessionHeader header;  ///< written with the first event (logs are created lazily)
  std::vector<std::string> additional_directories;
  /// The conversation as the model sees it, valid while the log has `history_seq` events; another
  /// process appending to the log invalidates it (the prompt then re-reads the surface).
  std::vector<llm::Message> history;
  std::int64_t history_seq = -1;
  std::shared_ptr<Turn> turn;  ///< set while a prompt runs
  std::string model;            ///< the session's model choice ("" = the configured model)
  std::string logged_provider;  ///< config of the log's latest request/header ("" = none yet)
  std::string logged_model;
};

/// Sessions created on this connection (ACP scopes session ids to the connection that made them).
class SessionRegistry {
public:
  SessionState& add(SessionState state);
  SessionState* find(const std::string& id);
  /// Cancels every running turn (shutdown).
  void cancel_all();
  /// Forgets a session (session/close); cancels its running turn first.
  void remove(const std::string& id);
  std::size_t running_turns() const;

private:
  std::map<std::string, SessionState> sessions_;
};

/// The session store, opened on first use: opening sweeps the listing index, which must not delay
/// the answer to initialize. Thread-safe (first use happens on the thread pool).
class StoreHandle {
public:
  explicit StoreHandle(std::function<std::unique_ptr<store::SessionStore>()> open);
  ~StoreHandle();
  store::SessionStore& get();

private:
  std::function<std::unique_ptr<store::SessionStore>()> open_;
  std::once_flag once_;
  std::unique_ptr<store::SessionStore> store_;
};

struct HandlerContext {
  const support::Config& config;
  boost::asio::any_io_executor executor;
  boost::asio::any_io_executor blocking;  ///< thread pool for store I/O (locks, fsync, log reads)
  llm::Provider& provider;
  StoreHandle& store_handle;
  const refs::SessionReferenceService& references;
  SessionRegistry& sessions;
  /// Queues a notification on its session's stream at once (for synchronous producers such as a
  /// provider's delta sink; the connection stops reading requests while the outbox is full).
  std::function<void(const protocol::SessionNotification&)> notify;
  /// Queues already-serialised frames on the stream `key` (the session id), in order, once the
  /// outbox has room; the awaiting coroutine is suspended until then (backpressure without polling).
  /// false: the frames were dropped (shutdown, or the client stopped reading): stop producing.
  /// The awaitable runs on the connection's executor (co_spawn it there from other threads).
  std::function<boost::asio::awaitable<bool>(std::string key, std::vector<std::string> frames)> send_frames;
  std::string system_prompt_template;  ///< with {cwd} and {date} placeholders
  /// Whether the provider has the key it needs (set by the host; null = no key ever needed).
  ProviderAuth* auth = nullptr;

  /// May block on first use: call it from run_blocking().
  store::SessionStore& store() const { return store_handle.get(); }
};

/// The built-in system prompt (used when --system-prompt is not given).
std::string default_system_prompt();

/// Replaces {cwd} and {date} (UTC, YYYY-MM-DD).
std::string render_system_prompt(const std::string& tmpl, const std::string& cwd);

} // namespace acp::handlers
