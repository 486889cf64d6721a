#include "handlers/provider_auth.hpp"

#include "handlers/handler_context.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/key_file.hpp"
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

void ProviderAuth::logout() {
  // The file first: a key that cannot be removed is not reported forgotten.
  const bool removed = !key_file_.empty() && support::remove_key_file(key_file_);
  bool had = false;
  {
    std::lock_guard lock(mutex_);
    had = !key_.empty();
    key_.clear();
  }
  if (had && install_) install_("");
  log::info(std::string("logout: provider ") + provider_ + (had ? " forgot its key" : " had no key") +
            (removed ? "; the stored key file was removed" : ""));
}

std::vector<protocol::AuthMethod> ProviderAuth::methods(bool client_runs_terminal) const {
  protocol::AuthMethod m;
  m.id = kMethodId;
  m.type = "agent";
  if (!key_required_) {
    m.name = "No sign-in needed";
    m.description = "The " + provider_ + " model needs no API key: authenticate succeeds at once.";
    return {m};
  }
  const bool deepseek = provider_ == "deepseek";
  std::string var = deepseek ? "DEEPSEEK_API_KEY" : "OPENAI_API_KEY";
  std::string file_key = deepseek ? "deepseekApiKey" : "openaiApiKey";
  m.name = deepseek ? "DeepSeek API key" : "API key";
  m.description = "Set " + var + " in the environment of this agent server in your editor's agent configuration "
                  "(then restart the agent), " +
                  (deepseek ? std::string("store one with `dsh-acp --setup`, ") : std::string()) + "or put \"" +
                  file_key + "\": \"...\" in the dsh-acp config file ($DSH_ACP_HOME/config.json, else "
                  "~/.config/dsh-acp/config.json); then authenticate again: the agent looks for the key anew.";
  std::vector<protocol::AuthMethod> out{m};
  if (client_runs_terminal && !key_file_.empty()) {
    protocol::AuthMethod setup;
    setup.id = kSetupMethodId;
    setup.type = "terminal";
    setup.name = "Enter a DeepSeek API key";
    setup.description = "Asks for the key in a terminal (input hidden) and stores it in " + key_file_ +
                        " (mode 0600); used when DEEPSEEK_API_KEY is not set.";
    setup.args = std::vector<std::string>{"--setup"};
    out.push_back(std::move(setup));
  }
  return out;
}

void require_provider_key(const HandlerContext& ctx) {
  if (ctx.auth) ctx.auth->require();
}

} // namespace acp::handlers
