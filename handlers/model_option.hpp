// The per-session model choice: offered as an ACP session config option (`configOptions` entry with
// id "model", category "model", type "select"; acp-protocol.md §3), used as llm::Request::model, and
// logged as a harness-shaped `request/header` event after the step/start of the next request whose
// model differs from the log's latest header (harness-compat §1.4: reason "initial" or "change").
//
// The choices are the configured model, then the config file's `models`, without duplicates, plus a
// model restored from the session's log when it is not among them. The echo provider has no models:
// it offers no option and writes no header, so echo sessions and their logs are unchanged.
#pragma once

#include "handlers/handler_context.hpp"
#include "protocol/types/session.hpp"
#include "store/new_event.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace acp::handlers {

inline constexpr const char* kModelOptionId = "model";

/// True when the configured provider has models to choose from (not echo).
bool offers_models(const support::Config& config);

/// The configured model, then `config.models`, then `current`, each once, in that order.
std::vector<std::string> model_choices(const support::Config& config, const std::string& current);

/// The model the session's next request uses.
std::string session_model(const support::Config& config, const SessionState& session);

/// The session's configOptions; nullopt when the provider offers no models.
std::optional<std::vector<protocol::SessionConfigOption>> model_config_options(const support::Config& config,
                                                                                const SessionState& session);

/// The request/header event for a request with `provider`/`model`, or nullopt when the log's latest
/// header (`session.logged_provider`/`logged_model`) already says so.
std::optional<store::NewEvent> request_header_event(const SessionState& session, const std::string& provider,
                                                    const std::string& model);

/// If `event` (a stored log line) is a request/header, records its provider and model in `provider`
/// and `model`.
void note_request_header(const boost::json::object& event, std::string& provider, std::string& model);

/// After load/resume: remembers the log's latest header and restores its model as the session's
/// choice when it was written for the provider we run now (another provider's names mean nothing here).
void restore_model(const support::Config& config, SessionState& session, const std::string& logged_provider,
                   const std::string& logged_model);

} // namespace acp::handlers
