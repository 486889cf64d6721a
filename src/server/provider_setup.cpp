#include "server/provider_setup.hpp"

#include "llm/echo_provider.hpp"
#include "llm/openai/endpoint.hpp"
#include "llm/openai/openai_provider.hpp"
#include "support/log.hpp"

#include <mutex>

namespace acp::server {

namespace {

// Rebuilds the OpenAI-compatible provider when authenticate finds a new key.
class KeyedProvider final : public llm::Provider {
public:
  KeyedProvider(llm::OpenAiConfig config, boost::asio::any_io_executor executor)
      : config_(std::move(config)), executor_(std::move(executor)),
        current_(llm::make_openai_provider(config_, executor_)) {}

  std::string name() const override { return config_.provider; }

  boost::asio::awaitable<llm::Completion> stream(const llm::Request& request, llm::DeltaSink sink) override {
    // Keeps the provider this stream started with alive even if the key changes meanwhile.
    std::shared_ptr<llm::Provider> provider = current();
    co_return co_await provider->stream(request, std::move(sink));
  }

  void set_key(const std::string& key) {
    llm::OpenAiConfig next = config_;
    next.api_key = key;
    std::shared_ptr<llm::Provider> rebuilt = llm::make_openai_provider(next, executor_);
    std::lock_guard lock(mutex_);
    current_ = std::move(rebuilt);
  }

private:
  std::shared_ptr<llm::Provider> current() const {
    std::lock_guard lock(mutex_);
    return current_;
  }

  const llm::OpenAiConfig config_;
  boost::asio::any_io_executor executor_;
  mutable std::mutex mutex_;  ///< set_key runs on the blocking pool (authenticate)
  std::shared_ptr<llm::Provider> current_;
};

} // namespace

bool provider_needs_key(const support::Config& config) {
  if (config.provider == "deepseek") return true;
  if (config.provider != "openai") return false;
  try {
    return !llm::is_loopback_host(llm::parse_base_url(config.base_url).host);
  } catch (const llm::ConfigError&) {
    return true;  // make_openai_provider reports the bad URL
  }
}

std::string provider_key(const support::Config& config) {
  if (config.provider == "deepseek") return config.deepseek_api_key;
  if (config.provider == "openai") return config.openai_api_key;
  return {};
}

ProviderSetup make_provider(const support::Config& config, std::vector<std::string> args,
                            boost::asio::any_io_executor executor) {
  ProviderSetup setup;
  if (config.provider == "echo") {
    // With a window configured, echo refuses requests above it like a real server (compaction tests).
    std::optional<std::int64_t> window;
    if (auto it = config.context_windows.find(config.model); it != config.context_windows.end()) window = it->second;
    setup.provider = llm::make_echo_provider(executor, std::chrono::milliseconds(config.echo_delay_ms), window);
    setup.auth = std::make_unique<handlers::ProviderAuth>("echo", false, "", nullptr, nullptr);
    return setup;
  }
  llm::OpenAiConfig oc;
  oc.provider = config.provider;
  oc.base_url = config.base_url;
  oc.api_key = provider_key(config);
  oc.model = config.model;
  oc.ca_file = config.ca_file;
  oc.allow_insecure_http = config.allow_insecure_http;
  oc.connect_timeout_ms = config.connect_timeout_ms;
  oc.idle_timeout_ms = config.idle_timeout_ms;
  oc.request_timeout_ms = config.request_timeout_ms;
  oc.max_retries = static_cast<int>(config.max_retries);
  oc.retry_base_ms = config.retry_base_ms;
  auto provider = std::make_unique<KeyedProvider>(oc, executor);
  KeyedProvider* keyed = provider.get();
  // authenticate: the same sources, re-read now (the file may have gained a key since start-up).
  auto reload = [args = std::move(args)]() -> std::string {
    try {
      return provider_key(support::load_config(args, support::process_environment()).config);
    } catch (const support::ConfigError& e) {
      log::warn(std::string("authenticate: configuration unreadable: ") + e.what());
      return {};
    }
  };
  setup.auth = std::make_unique<handlers::ProviderAuth>(config.provider, provider_needs_key(config), oc.api_key,
                                                        std::move(reload),
                                                        [keyed](const std::string& key) { keyed->set_key(key); });
  if (config.provider == "deepseek") setup.auth->offer_setup(config.key_file);
  setup.provider = std::move(provider);
  return setup;
}

} // namespace acp::server
