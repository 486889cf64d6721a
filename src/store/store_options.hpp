// How a store is opened: one set of options for every backend (`--store`, `dsh-acp store`). A
// PostgreSQL store takes the lock timeout and the generation of new sessions; the rest are a root's.
#pragma once

#include "store/layout.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace acp::store {

struct StoreOptions {
  std::string root;                      ///< made absolute once; created (0700) when missing
  std::optional<Encoding> encoding;      ///< requested; nullopt = the root's, or zstd for a new root
  /// The listing and content indexes' directory ($XDG_CACHE_HOME/dsh-acp); empty = the listing
  /// index in memory only, no content index (search_content scans the logs).
  std::string cache_dir;
  std::chrono::milliseconds lock_timeout{2000};
  /// Requested layout; nullopt = the root's, or `default_generation` for a root that holds no log
  /// (for PostgreSQL: the shape of new sessions).
  std::optional<Generation> generation;
  Generation default_generation = Generation::flat;
  bool read_only = false;                ///< list and read, never write (a discovered harness root)
};

} // namespace acp::store
