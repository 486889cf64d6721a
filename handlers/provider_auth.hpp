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
  /// The method every client gets (type agent: the client calls authenticate, which looks for a
  /// key again), with a key or without, whatever the provider: the ACP registry lists only agents
  /// that advertise one, and a client that got -32000 learns from it where a key goes.
  static constexpr const char* kMethodId = "dsh-acp-api-key";
  /// The terminal method (`dsh-acp --setup` asks for the key and stores it), for clients that said
  /// they run one (clientCapabilities.auth.terminal) when the provider is DeepSeek.
  static constexpr const char* kSetupMethodId = "dsh-acp-setup";

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
  /// `logout`: forgets the key in use, whichever source it came from (requests answer -32000 until
  /// authenticate finds one again: the environment's and the config file's are found again, as
  /// they are not ours to change), and removes the key file --setup wrote. Blocking (the file);
  /// throws std::system_error when the file cannot be removed.
  void logout();
  /// Offers the terminal method; `key_file` is where it stores the key (and what logout removes).
  void offer_setup(std::string key_file) { key_file_ = std::move(key_file); }
  /// What initialize advertises: the agent method, and the terminal method to a client that runs
  /// one (the schema allows it only then) when set-up is offered.
  std::vector<protocol::AuthMethod> methods(bool client_runs_terminal) const;

private:
  std::string provider_;
  bool key_required_;
  mutable std::mutex mutex_;  ///< refresh() runs on the blocking pool
  std::string key_;
  std::function<std::string()> reload_;
  std::function<void(const std::string&)> install_;
  std::string key_file_;  ///< "" = no terminal method
};

} // namespace acp::handlers

namespace acp::handlers {

struct HandlerContext;

/// Answers -32000 unless the provider may be used now (session/new, session/load, session/prompt).
void require_provider_key(const HandlerContext& ctx);

} // namespace acp::handlers
