// The server's configuration: support::load_config plus the checks that need a library acp_support
// sits below (what a store URL is, and where its password is, is acp_store_pg's store/pg/url.hpp).
#pragma once

#include "support/config.hpp"

#include <string>
#include <vector>

namespace acp::server {

/// support::load_config, then every store: a PostgreSQL URL carrying a password is refused
/// (ConfigError naming the URL redacted), whether it came from a flag, the environment or the file.
support::CliResult load_config(const std::vector<std::string>& args, const support::Environment& env);

} // namespace acp::server
