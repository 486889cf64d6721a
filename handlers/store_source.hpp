// The session store seen by the reference service: surfaces and listings of stored sessions.
// Calls block (they read logs) and run on the reference service's own threads.
#pragma once

#include "engine/engine.hpp"
#include "refs/service.hpp"

namespace acp::handlers {

class StoreSessionSource final : public refs::SessionSource {
public:
  explicit StoreSessionSource(engine::StoreHandle& store) : store_(store) {}
  store::SurfaceSnapshot read_surface(const std::string& session_id) override;
  std::vector<store::SessionListing> list_sessions() override;

private:
  engine::StoreHandle& store_;
};

} // namespace acp::handlers
