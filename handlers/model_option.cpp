#include "handlers/model_option.hpp"

#include <algorithm>

namespace acp::handlers {

namespace json = boost::json;

bool offers_models(const support::Config& config) { return config.provider != "echo"; }

std::vector<std::string> model_choices(const support::Config& config, const std::string& current) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& m) {
    if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  add(config.model);
  for (const auto& m : config.models) add(m);
  add(current);
  return out;
}

std::string session_model(const support::Config& config, const SessionState& session) {
  return session.model.empty() ? config.model : session.model;
}

std::optional<std::vector<protocol::SessionConfigOption>> model_config_options(const support::Config& config,
                                                                                const SessionState& session) {
  if (!offers_models(config)) return std::nullopt;
  protocol::SessionConfigOption option;
  option.id = kModelOptionId;
  option.name = "Model";
  option.description = "The " + config.provider + " model this session's next requests use";
  option.category = "model";
  option.type = "select";
  option.currentValue = session_model(config, session);
  for (const auto& m : model_choices(config, option.currentValue))
    option.options.push_back(protocol::SessionConfigSelectOption{m, m, std::nullopt, std::nullopt});
  return std::vector<protocol::SessionConfigOption>{std::move(option)};
}

std::optional<store::NewEvent> request_header_event(const SessionState& session, const std::string& provider,
                                                    const std::string& model) {
  if (provider == "echo") return std::nullopt;
  if (session.logged_provider == provider && session.logged_model == model) return std::nullopt;
  store::NewEvent e;
  e.type = "request/header";
  e.data = json::object{{"header", {{"config", {{"provider", provider}, {"model", model}}}}},
                        {"reason", session.logged_model.empty() ? "initial" : "change"}};
  return e;
}

void note_request_header(const json::object& event, std::string& provider, std::string& model) {
  const auto* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != "request/header") return;
  const json::value* config = nullptr;
  if (const auto* data = event.if_contains("data"); data && data->is_object())
    if (const auto* header = data->get_object().if_contains("header"); header && header->is_object())
      config = header->get_object().if_contains("config");
  if (!config || !config->is_object()) return;
  const auto* p = config->get_object().if_contains("provider");
  const auto* m = config->get_object().if_contains("model");
  if (!p || !p->is_string() || !m || !m->is_string() || m->get_string().empty()) return;
  provider = p->get_string();
  model = m->get_string();
}

void restore_model(const support::Config& config, SessionState& session, const std::string& logged_provider,
                   const std::string& logged_model) {
  session.logged_provider = logged_provider;
  session.logged_model = logged_model;
  if (offers_models(config) && !logged_model.empty() && logged_provider == config.provider) session.model = logged_model;
}

} // namespace acp::handlers
