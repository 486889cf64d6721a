#include "handlers/store_source.hpp"

#include "store/session_store.hpp"

namespace acp::handlers {

store::SurfaceSnapshot StoreSessionSource::read_surface(const std::string& session_id) {
  // Unknown ids surface as SessionNotFound, whose message is the original's `session "<id>" not found`.
  return store_.get().read_surface(session_id);
}

std::vector<store::SessionListing> StoreSessionSource::list_sessions() { return store_.get().list_sessions(); }

} // namespace acp::handlers
