// PostgreSQL store URLs: recognising them and keeping their passwords out of every message.
// Every message or log line naming a PostgreSQL store uses redact_url(url).
#pragma once

#include <string>
#include <string_view>

namespace acp::store::pg {

/// True for "postgresql://..." and "postgres://..." (scheme case-insensitive).
bool is_postgres_url(std::string_view s);

/// `url` with every password replaced by "***": the userinfo's ("user:pw@" -> "user:***@") and a
/// `password=` query parameter's. A key=value conninfo string gets its `password=` value replaced.
/// Anything else is returned unchanged.
std::string redact_url(std::string_view url);

/// True when `url` carries a password (userinfo or `password=`), so a caller can refuse it: credentials
/// come only the libpq ways (PGPASSFILE, a service file, PGPASSWORD).
bool url_has_password(std::string_view url);

/// `text` with every occurrence of a password `url` carries replaced by "***" (for messages libpq
/// makes from the URL's text, such as a parse error quoting a malformed token).
std::string scrub_passwords(std::string_view text, std::string_view url);

} // namespace acp::store::pg
