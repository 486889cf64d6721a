// Opening a store named by a spec, as `--store` and `dsh-acp store` take it: a directory (a root
// of harness log files, either generation) or a postgresql:// / postgres:// URL.
#pragma once

#include "store/backend.hpp"
#include "store/layout.hpp"
#include "store/store_options.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace acp::store {

/// Opens the store `spec` names (a URL is what pg::is_postgres_url, store/pg/url.hpp, says is one)
/// with `options` (its `root` is `spec`). Throws StoreError (a missing PostgreSQL schema, a root
/// holding both encodings, ...).
std::unique_ptr<Backend> open_backend(const std::string& spec, StoreOptions options);

/// `dsh-acp store migrate URL`: creates or upgrades the PostgreSQL schema. Throws StoreError.
void migrate_store(const std::string& url);

/// The first seq and the number of events of one storage line (a packed chunk row stands for
/// several), nullopt when the line is no log record.
std::optional<std::pair<std::int64_t, std::int64_t>> line_seqs(std::string_view line);

} // namespace acp::store
