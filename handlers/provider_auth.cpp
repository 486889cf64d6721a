#include "handlers/provider_auth.hpp"

#include "handlers/handler_context.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/log.hpp"

namespace acp::handlers {

ProviderAuth::ProviderAuth(std::string provider, bool key_required, std::string key,
                           std::function<std::string()> reload, std::function<void(const std::string&)> install)
    : provider_(std::move(provider)), key_required_(key_required), key_(std::move(key)), reload_(std::move(reload)),
      install_(std::move(install)) {}

bool ProviderAuth::ready() const {
  std::lock_guard lock(mutex_);
  return !key_required_ || !key_.empty();
}

void ProviderAuth::require() const {
  if (!ready()) throw jsonrpc::auth_required(provider_);
}

bool ProviderAuth::refresh() {
  std::string found = reload_ ? reload_() : std::string();
  {
    std::lock_guard lock(mutex_);
    // An empty answer never removes a key that works: the file may be mid-edit.
    if (found.empty() || found == key_) return !key_required_ || !key_.empty();
    key_ = found;
  }
  if (install_) install_(found);
  log::info("authenticate: a key for provider " + provider_ + " is now in use");
  return true;
}

std::vector<protocol::AuthMethod> ProviderAuth::methods() const {
  if (!key_required_) return {};
  std::string var = provider_ == "deepseek" ? "DEEPSEEK_API_KEY" : "OPENAI_API_KEY";
  std::string file_key = provider_ == "deepseek" ? "deepseekApiKey" : "openaiApiKey";
  protocol::AuthMethod m;
  m.id = kMethodId;
  m.name = provider_ == "deepseek" ? "DeepSeek API key" : "API key";
  m.description = "Set " + var + " in the environment of this agent server in your editor's agent configuration "
                  "(then restart the agent), or put \"" + file_key + "\": \"...\" in the dsh-acp config file "
                  "($DSH_ACP_HOME/config.json, else ~/.config/dsh-acp/config.json) and authenticate again.";
  return {m};
}

void require_provider_key(const HandlerContext& ctx) {
  if (ctx.auth) ctx.auth->require();
}

} // namespace acp::handlers
