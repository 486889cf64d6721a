// PostgreSQL store URLs: recognising them, refusing those that carry a password, and keeping
// passwords out of every message. Every message or log line naming a PostgreSQL store uses
// redact_url(url). What a URL carries is decided by libpq's own parser (PQconninfoParse), so every
// spelling libpq accepts (a percent-encoded keyword, the userinfo, a repeated parameter) is seen.
#pragma once

#include <string>
#include <string_view>

namespace acp::store::pg {

/// True for "postgresql://..." and "postgres://..." (scheme case-insensitive).
bool is_postgres_url(std::string_view s);

/// True when `url` carries a secret, so a caller refuses it: credentials come only the libpq ways
/// (PGPASSFILE or `passfile`, a service file, PGPASSWORD). A secret is a `password` or
/// `sslpassword` value, in any spelling libpq parses (userinfo "user:pw@", `password=`,
/// `%70assword=`, also empty), or in a `dbname` value that is itself a connection string; a URL
/// libpq cannot parse counts when its text shows a password field.
bool url_has_password(std::string_view url);

/// `url` with every secret replaced by "***": the userinfo's ("user:pw@" -> "user:***@") and each
/// query parameter's whose keyword (percent-decoded) names one, or whose dbname value carries one.
/// When libpq would still read a secret in the result, only the scheme and "***" are left. A
/// key=value conninfo string gets its password values replaced. Anything else is returned unchanged.
std::string redact_url(std::string_view url);

/// `text` with every occurrence of a secret `url` carries (as written, and as libpq decodes it)
/// replaced by "***" (for messages libpq makes from the URL's text, such as a parse error quoting
/// a malformed token).
std::string scrub_passwords(std::string_view text, std::string_view url);

} // namespace acp::store::pg
