// The session store seen by the reference service: projected surfaces (streamed, memory bounded by
// the reference budget) and listings of stored sessions. Calls block (they read logs) and run on the
// reference service's own threads.
#pragma once

#include "engine/engine.hpp"
#include "refs/service.hpp"

namespace acp::handlers {

class StoreSessionSource final : public refs::SessionSource {
public:
  explicit StoreSessionSource(engine::StoreHandle& store) : store_(store) {}
  refs::ProjectedSource read_projected(const std::string& session_id, std::int64_t max_reference_bytes,
                                       std::stop_token stop) override;
  refs::ProjectedSource read_anchored(const std::string& session_id, std::int64_t max_reference_bytes,
                                      std::int64_t anchor_seq, std::stop_token stop) override;
  std::vector<store::SessionListing> list_sessions() override;
  std::vector<store::ContentHit> search_content(const store::ContentQuery& query, std::stop_token stop) override;

private:
  refs::ProjectedSource read(const std::string& session_id, std::int64_t max_reference_bytes,
                             std::optional<std::int64_t> anchor_seq, std::stop_token stop);
  engine::StoreHandle& store_;
};

} // namespace acp::handlers
