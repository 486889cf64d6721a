#include "handlers/store_source.hpp"

#include "refs/streaming_projection.hpp"
#include "store/store_set.hpp"

namespace acp::handlers {

refs::ProjectedSource StoreSessionSource::read_projected(const std::string& session_id,
                                                         std::int64_t max_reference_bytes, std::stop_token stop) {
  return read(session_id, max_reference_bytes, std::nullopt, std::move(stop));
}

refs::ProjectedSource StoreSessionSource::read_anchored(const std::string& session_id,
                                                        std::int64_t max_reference_bytes, std::int64_t anchor_seq,
                                                        std::stop_token stop) {
  return read(session_id, max_reference_bytes, anchor_seq, std::move(stop));
}

refs::ProjectedSource StoreSessionSource::read(const std::string& session_id, std::int64_t max_reference_bytes,
                                               std::optional<std::int64_t> anchor_seq, std::stop_token stop) {
  // The log is streamed (checking `stop` per line) and folded as it goes; unknown ids surface as
  // SessionNotFound, whose message is the original's `session "<id>" not found`.
  auto stream = [&](const refs::EventSink& sink) {
    // Projection copies the texts it keeps; the events themselves die once folded.
    store::StreamResult r = store_.get().read_events(session_id, sink, stop, store::EventLifetime::transient);
    return refs::StreamedLog{std::move(r.header), r.capturedThroughSeq};
  };
  return refs::project_log(stream, max_reference_bytes, anchor_seq);
}

std::vector<store::SessionListing> StoreSessionSource::list_sessions() { return store_.get().list_sessions(); }

std::vector<store::ContentHit> StoreSessionSource::search_content(const store::ContentQuery& query, std::stop_token stop) {
  return store_.get().search_content(query, stop);
}

} // namespace acp::handlers
