#include "store/pg/libpq_loader.hpp"

#include "store/errors.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include <dlfcn.h>

namespace acp::store::pg {
namespace {

struct Loaded {
  std::optional<Libpq> table;
  std::string error;  ///< why table is empty
};

std::string dl_error(const char* fallback) {
  const char* e = ::dlerror();
  return e ? e : fallback;
}

Loaded load() {
  Loaded out;
  const char* file = libpq_file();
  // RTLD_NOW: a libpq that lacks a dependency fails here, once, not at some later call. Never
  // closed: its functions are used until exit, and libpq keeps state (SSL, the notice hooks).
  void* handle = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    out.error = dl_error(file);
    return out;
  }
  Libpq t;
  std::string missing;
#define DSH_LIBPQ_RESOLVE(name) \
  if (missing.empty()) { \
    void* address = ::dlsym(handle, #name); \
    if (address) t.name = reinterpret_cast<decltype(t.name)>(address); \
    else missing = dl_error(#name); \
  }
  DSH_LIBPQ_FUNCTIONS(DSH_LIBPQ_RESOLVE)
#undef DSH_LIBPQ_RESOLVE
  if (!missing.empty()) {
    out.error = missing;
    return out;
  }
  out.table = t;
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
