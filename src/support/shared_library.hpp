#pragma once

#include <string>

namespace acp::support {

/// Opens a shared object at run time (dlopen, RTLD_NOW | RTLD_LOCAL): a missing dependency fails
/// here, once, and nothing leaks into the global symbol scope. Never closed: the libraries opened
/// this way (libssl, libpq) keep process-wide state until exit. nullptr with `error` set on failure.
void* open_shared_library(const char* file, std::string& error);

/// Looks `name` up in `handle` (and what it depends on) into `slot`, unless `error` already holds an
/// earlier failure; sets `error` when the symbol is missing. Resolving a whole table this way leaves
/// the first missing name in `error`.
void* find_symbol(void* handle, const char* name, std::string& error);

template <class Function>
void resolve_symbol(void* handle, const char* name, Function*& slot, std::string& error) {
  if (!error.empty()) return;
  if (void* address = find_symbol(handle, name, error)) slot = reinterpret_cast<Function*>(address);
}

} // namespace acp::support
