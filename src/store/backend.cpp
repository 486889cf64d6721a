#include "store/backend.hpp"

#include "store/errors.hpp"
#include "store/session_writer.hpp"

namespace acp::store {

SessionWriter Backend::open_or_create(const SessionHeader& header, const LockWait& wait) {
  if (exists(header.id)) return open(header.id, wait);
  return create(header, wait);
}

Generation Backend::export_lines(const std::string&, const std::function<void(std::string_view)>&,
                                 const std::function<void(std::string_view)>&, std::int64_t) {
  throw StoreError("store " + name() + " cannot export logs");
}

void Backend::import_lines(const std::string&, Generation, const std::string&, std::int64_t,
                           const std::vector<std::string>&) {
  throw StoreError("store " + name() + " cannot import logs");
}

void Backend::set_shared(const std::string&, bool) {
  throw SharingUnsupported("sharing needs a PostgreSQL store; " + name() + " is one person's files");
}

} // namespace acp::store
