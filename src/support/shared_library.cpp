#include "support/shared_library.hpp"

#include <dlfcn.h>

namespace acp::support {
namespace {

std::string dl_error(const char* fallback) {
  const char* e = ::dlerror();
  return e ? e : fallback;
}

} // namespace

void* open_shared_library(const char* file, std::string& error) {
  void* handle = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!handle) error = dl_error(file);
  return handle;
}

void* find_symbol(void* handle, const char* name, std::string& error) {
  void* address = ::dlsym(handle, name);
  if (!address) error = dl_error(name);
  return address;
}

} // namespace acp::support
