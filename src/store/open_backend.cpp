#include "store/open_backend.hpp"

#include "store/chunk_rows.hpp"
#include "store/errors.hpp"
#include "store/line_text.hpp"
#include "store/pg/connection.hpp"
#include "store/pg/pg_store.hpp"
#include "store/pg/schema.hpp"
#include "store/pg/url.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"


namespace acp::store {

namespace {

// ---- PostgreSQL: the one place a URL becomes a store. -------------------------------------------

std::unique_ptr<Backend> open_postgres(const std::string& url, const StoreOptions& options) {
  pg::PgStoreOptions o;
  o.url = url;
  o.lock_timeout = options.lock_timeout;
  o.generation = options.generation.value_or(options.default_generation);
  return std::make_unique<pg::PgStore>(std::move(o));
}

void migrate_postgres(const std::string& url) {
  pg::PgConnection c = pg::PgConnection::connect(url);
  pg::migrate(c);
}

// -------------------------------------------------------------------------------------------------

} // namespace

std::unique_ptr<Backend> open_backend(const std::string& spec, StoreOptions options) {
  if (pg::is_postgres_url(spec)) return open_postgres(spec, options);
  options.root = spec;
  return std::make_unique<SessionStore>(std::move(options));
}

void migrate_store(const std::string& url) {
  if (!pg::is_postgres_url(url)) throw StoreError(url + " is not a postgresql:// or postgres:// URL");
  migrate_postgres(url);
}

std::optional<std::pair<std::int64_t, std::int64_t>> line_seqs(std::string_view line) {
  boost::system::error_code ec;
  boost::json::value v = parse_stored_line(line, ec);
  if (ec) return std::nullopt;
  std::vector<boost::json::object> events;
  if (decode_storage_line(std::move(v), events) == LineDecode::malformed || events.empty()) return std::nullopt;
  const boost::json::value* seq = events.front().if_contains("seq");
  auto first = seq ? safe_int(*seq) : std::nullopt;
  if (!first) return std::nullopt;
  return std::pair{*first, std::int64_t(events.size())};
}

} // namespace acp::store
