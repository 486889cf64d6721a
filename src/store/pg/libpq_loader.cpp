#include "store/pg/libpq_loader.hpp"

#include "store/errors.hpp"
#include "support/shared_library.hpp"

#include <cstdlib>
#include <optional>
#include <string>


namespace acp::store::pg {
namespace {

struct Loaded {
  std::optional<Libpq> table;
  std::string error;  ///< why table is empty
};

Loaded load() {
  Loaded out;
  // Opened once, with every dependency, and never closed: its functions are used until exit, and
  // libpq keeps state (SSL, the notice hooks). support/shared_library.hpp.
  void* handle = support::open_shared_library(libpq_file(), out.error);
  if (!handle) return out;
  Libpq t;
#define DSH_LIBPQ_RESOLVE(name) support::resolve_symbol(handle, #name, t.name, out.error);
  DSH_LIBPQ_FUNCTIONS(DSH_LIBPQ_RESOLVE)
#undef DSH_LIBPQ_RESOLVE
  if (out.error.empty()) out.table = t;
  return out;
}

const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

} // namespace

const char* libpq_file() noexcept {
  const char* named = std::getenv("DSH_ACP_LIBPQ");
  return named && *named ? named : "libpq.so.5";
}

const Libpq& libpq() {
  const Loaded& l = loaded();
  if (!l.table) throw StoreError("PostgreSQL stores need libpq (Debian's package libpq5), which cannot be loaded: " + l.error);
  return *l.table;
}

const Libpq* libpq_if_loadable() noexcept {
  const Loaded& l = loaded();
  return l.table ? &*l.table : nullptr;
}

} // namespace acp::store::pg
