// What a handler may touch: configuration, the model provider, this connection's sessions, and the
// notification sink (the outbox). Handlers never see JSON-RPC ids, frames or file descriptors.
// Everything here is used on the connection's executor only.
#pragma once

#include "llm/provider.hpp"
#include "protocol/types/updates.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace acp::handlers {

/// The running prompt of a session; session/cancel reaches it through `signal`.
struct Turn {
  boost::asio::cancellation_signal signal;
  bool cancel_requested = false;
};

struct SessionState {
  std::string id;
  std::string cwd;
  std::vector<std::string> additional_directories;
  std::vector<llm::Message> history;  ///< the conversation so far (user and assistant messages)
  std::shared_ptr<Turn> turn;         ///< set while a prompt runs
};

/// Sessions created on this connection (ACP scopes session ids to the connection that made them).
class SessionRegistry {
public:
  SessionState& add(SessionState state);
  SessionState* find(const std::string& id);
  /// Cancels every running turn (shutdown).
  void cancel_all();
  std::size_t running_turns() const;

private:
  std::map<std::string, SessionState> sessions_;
};

struct HandlerContext {
  const support::Config& config;
  boost::asio::any_io_executor executor;
  llm::Provider& provider;
  SessionRegistry& sessions;
  std::function<void(const protocol::SessionNotification&)> notify;
  std::string system_prompt_template;  ///< with {cwd} and {date} placeholders
};

/// The built-in system prompt (used when --system-prompt is not given).
std::string default_system_prompt();

/// Replaces {cwd} and {date} (UTC, YYYY-MM-DD).
std::string render_system_prompt(const std::string& tmpl, const std::string& cwd);

} // namespace acp::handlers
