#include "server/server_config.hpp"

#include "store/pg/url.hpp"

namespace acp::server {

support::CliResult load_config(const std::vector<std::string>& args, const support::Environment& env) {
  support::CliResult result = support::load_config(args, env);
  for (const auto& store : result.config.stores)
    if (store::pg::is_postgres_url(store) && store::pg::url_has_password(store))
      throw support::ConfigError("store " + store::pg::redact_url(store) +
                                 ": a password in a store URL is refused; give it the libpq ways (PGPASSFILE, a "
                                 "service file, or PGPASSWORD in the environment)");
  return result;
}

} // namespace acp::server
