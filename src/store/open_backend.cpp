#include "store/open_backend.hpp"

#include "store/chunk_rows.hpp"
#include "store/errors.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "support/json_text.hpp"

#include <algorithm>
#include <cctype>

namespace acp::store {

namespace {

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(),
                    [](char a, char b) { return std::tolower((unsigned char)a) == std::tolower((unsigned char)b); });
}

// ---- PostgreSQL: the one place a URL becomes a store. -------------------------------------------
// TODO(issue 17, merge of pg-store / pg-conn): construct store::pg::PgStore here and call
// store::pg::migrate on a PgConnection; use pg::is_postgres_url / pg::redact_url above.

std::unique_ptr<Backend> open_postgres(const std::string& url, const OpenOptions& options) {
  (void)options;
  throw StoreError(redact_store_spec(url) + ": PostgreSQL stores are not built in yet");
}

void migrate_postgres(const std::string& url) {
  throw StoreError(redact_store_spec(url) + ": PostgreSQL stores are not built in yet");
}

// -------------------------------------------------------------------------------------------------

} // namespace

bool is_store_url(std::string_view spec) {
  return starts_with_nocase(spec, "postgresql://") || starts_with_nocase(spec, "postgres://");
}

std::string redact_store_spec(std::string_view spec) {
  std::string s(spec);
  if (!is_store_url(s)) return s;
  // userinfo "user:password@": up to the first '/', '?' or '#' after the scheme.
  const std::size_t start = s.find("://") + 3;
  const std::size_t end = std::min(s.find_first_of("/?#", start), s.size());
  const std::size_t at = s.rfind('@', end);
  if (at != std::string::npos && at >= start) {
    const std::size_t colon = s.find(':', start);
    if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
  }
  // password=... in the query string.
  for (std::size_t q = s.find('?'); q != std::string::npos;) {
    const std::size_t key = q + 1;
    const std::size_t amp = s.find('&', key);
    if (s.compare(key, 9, "password=") == 0) {
      const std::size_t value = key + 9;
      s.replace(value, (amp == std::string::npos ? s.size() : amp) - value, "***");
      q = s.find('&', value);
    } else {
      q = amp;
    }
  }
  return s;
}

std::unique_ptr<Backend> open_backend(const std::string& spec, const OpenOptions& options) {
  if (is_store_url(spec)) return open_postgres(spec, options);
  StoreOptions o;
  o.root = spec;
  o.encoding = options.encoding;
  o.generation = options.generation;
  o.default_generation = options.default_generation;
  o.cache_dir = options.cache_dir;
  o.read_only = options.read_only;
  o.lock_timeout = options.lock_timeout;
  return std::make_unique<SessionStore>(std::move(o));
}

void migrate_store(const std::string& url) {
  if (!is_store_url(url)) throw StoreError(url + " is not a postgresql:// or postgres:// URL");
  migrate_postgres(url);
}

std::optional<std::pair<std::int64_t, std::int64_t>> line_seqs(std::string_view line) {
  boost::system::error_code ec;
  boost::json::value v = support::parse_json(line, ec);
  if (ec) return std::nullopt;
  std::vector<boost::json::object> events;
  if (decode_storage_line(std::move(v), events) == LineDecode::malformed || events.empty()) return std::nullopt;
  const boost::json::value* seq = events.front().if_contains("seq");
  auto first = seq ? safe_int(*seq) : std::nullopt;
  if (!first) return std::nullopt;
  return std::pair{*first, std::int64_t(events.size())};
}

} // namespace acp::store
