// Whether the selected model provider may be used yet, and how a missing API key is picked up later
// (ACP authentication: https://agentclientprotocol.com/protocol/initialization).
//
// A provider that needs a key and has none still lets the client initialize, list and delete
// sessions; session/new, session/load and session/prompt answer -32000 until `authenticate` finds a
// key. The host supplies how to re-read the key (environment + config file) and how to hand it to the
// provider, so this class knows nothing about files or HTTP. Used on the connection's executor;
// `refresh()` reads files and belongs on the blocking pool.
#pragma once

#include "protocol/types/initialize.hpp"

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace acp::handlers {

class ProviderAuth {
public:
  /// The one auth method we advertise (type agent, the ACP default: the client calls authenticate).
  static constexpr const char* kMethodId = "dsh-acp-api-key";

  /// `reload` returns the key found now ("" = none); `install` gives a new key to the provider.
  ProviderAuth(std::string provider, bool key_required, std::string key, std::function<std::string()> reload,
               std::function<void(const std::string&)> install);

  const std::string& provider() const noexcept { return provider_; }
  bool key_required() const noexcept { return key_required_; }
  /// True when requests may go to the provider (no key needed, or one is known).
  bool ready() const;
  /// Throws jsonrpc::auth_required(provider) unless ready().
  void require() const;
  /// Re-reads the key; installs it in the provider when it changed. Returns ready(). Blocking.
  bool refresh();
  /// What initialize advertises: one method when a key is needed, none otherwise.
  std::vector<protocol::AuthMethod> methods() const;

private:
  std::string provider_;
  bool key_required_;
  mutable std::mutex mutex_;  ///< refresh() runs on the blocking pool
  std::string key_;
  std::function<std::string()> reload_;
  std::function<void(const std::string&)> install_;
};

} // namespace acp::handlers

namespace acp::handlers {

struct HandlerContext;

/// Answers -32000 unless the provider may be used now (session/new, session/load, session/prompt).
void require_provider_key(const HandlerContext& ctx);

} // namespace acp::handlers
