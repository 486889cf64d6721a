// Builds the model provider the configuration selects (echo, deepseek, openai) together with its
// authentication state, and lets `authenticate` hand a key found later to the running provider.
//
// The OpenAI-compatible provider reads its key at construction, so the keyed provider here is a thin
// wrapper that rebuilds the inner provider when the key changes; streams already running keep the
// provider they started with. Nothing here touches the network or TLS (start-up stays fast).
#pragma once

#include "handlers/provider_auth.hpp"
#include "llm/provider.hpp"
#include "support/config.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace acp::server {

struct ProviderSetup {
  std::unique_ptr<llm::Provider> provider;
  std::unique_ptr<handlers::ProviderAuth> auth;
};

/// True when the configured provider cannot work without an API key: deepseek always, openai unless
/// its base URL names a loopback host (llama.cpp, Ollama, vLLM on this machine).
bool provider_needs_key(const support::Config& config);

/// The key of the configured provider in `config` ("" = none).
std::string provider_key(const support::Config& config);

/// `args` are the original command-line arguments: authenticate re-reads the environment and the
/// config file with them. Throws llm::ConfigError for a configuration that can never work.
ProviderSetup make_provider(const support::Config& config, std::vector<std::string> args,
                            boost::asio::any_io_executor executor);

} // namespace acp::server
