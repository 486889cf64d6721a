// The session-reference service: candidates for new mentions and preparation of referenced
// context ahead of a direct message (docs/references.md).
//
// The host implements SessionSource over the session store and owns one service per process. The
// service is immutable after construction and may be used from several threads at once. prepare()
// starts one read per distinct source in parallel on threads of its own and joins every one of them
// before it returns or throws: a cancel (or the first failure in mention order) stops the remaining
// reads through their stop token, so nothing outlives the call. Nothing is ever partially returned:
// either a complete PreparedMessage or a SessionReferenceError.
#pragma once

#include "refs/config.hpp"
#include "refs/projection.hpp"
#include "refs/types.hpp"
#include "refs/work_counter.hpp"

#include "store/content_search.hpp"
#include "store/session_types.hpp"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace acp::refs {

/// What the service needs from the store. Both calls may block and may run on any thread.
class SessionSource {
public:
  virtual ~SessionSource() = default;
  /// The projected current surface of a session (readSurface + projection:
  /// docs/store-format.md#reading-a-surface, docs/session-references.md#projection). Texts of items
  /// that retention under `max_reference_bytes` certainly drops may come back released
  /// (ProjectedItem::released), which is how a store-backed source keeps its memory bounded
  /// (project_log in streaming_projection.hpp). Throws std::exception with a message on failure;
  /// `session "<id>" not found` for unknown ids. Once `stop` is requested the read should end
  /// promptly (checked per event) by throwing; the service then reports a cancellation.
  virtual ProjectedSource read_projected(const std::string& session_id, std::int64_t max_reference_bytes,
                                         std::stop_token stop) = 0;
  /// The same for a reference anchored at `anchor_seq` (docs/session-references.md#anchors): the
  /// texts kept are those around the anchored item, and ProjectedSource::anchor names it. The
  /// default suits hosts whose read_projected() never releases texts: it resolves the anchor from
  /// the items' seqs (anchor_by_item_seqs). A store-backed source overrides it (project_log).
  virtual ProjectedSource read_anchored(const std::string& session_id, std::int64_t max_reference_bytes,
                                        std::int64_t anchor_seq, std::stop_token stop);
  /// All sessions, newest first (createdAt descending, ties by id under en-US collation).
  virtual std::vector<store::SessionListing> list_sessions() = 0;
  /// Sessions whose content matches (store::Backend::search_content over every store); the
  /// default finds nothing (a source without stores).
  virtual std::vector<store::ContentHit> search_content(const store::ContentQuery& query, std::stop_token stop) {
    (void)query, (void)stop;
    return {};
  }
};

/// normalizeReferences for typed input: self check before dedupe, first label wins, then the cap.
std::vector<NormalizedReference> normalize_references(std::string_view target_id,
                                                      std::span<const SessionReference> references,
                                                      std::int64_t max_references);

/// normalizeReferences for raw JSON elements, which may be anything: a non-object, a non-string
/// sessionId or a non-string label fail with invalid_reference, element by element, before the cap.
std::vector<NormalizedReference> normalize_references(std::string_view target_id, const boost::json::array& references,
                                                      std::int64_t max_references);

/// Retention and serialization of projected sources (the part of prepare() after the reads).
/// sources[i] belongs to references[i]. Throws budget_exceeded.
AdditionalContext render_context(const std::vector<NormalizedReference>& references,
                                 const std::vector<ProjectedSource>& sources, std::int64_t max_reference_bytes,
                                 WorkCounter* counter = nullptr);

/// The same for snapshots already in memory, projected without copying their texts.
AdditionalContext render_context(const std::vector<NormalizedReference>& references,
                                 const std::vector<store::SurfaceSnapshot>& snapshots, std::int64_t max_reference_bytes,
                                 WorkCounter* counter = nullptr);

class SessionReferenceService {
public:
  SessionReferenceService(std::shared_ptr<SessionSource> source, Config config);

  const Config& config() const { return config_; }

  /// listCandidates(agent, query, limit). `limit` is raw input: nullopt takes config.candidate_limit;
  /// anything but a positive safe integer (null included) fails with invalid_reference. The query
  /// matches ids and cwds as the original does (docs/session-references.md#candidates), and titles
  /// too with `match_titles` (our extension).
  std::vector<Candidate> list_candidates(const Target& target, std::string_view query = {},
                                         const std::optional<boost::json::value>& limit = std::nullopt,
                                         std::stop_token stop = {}, bool match_titles = false) const;

  /// Sessions other than the target by what was said in them (docs/recall.md), best first, at
  /// most `limit` (> 0): only sessions the listing holds (so never a deleted one), labelled as
  /// candidates are.
  std::vector<ContentMatch> search_content(const Target& target, std::string_view words, std::size_t limit,
                                           std::stop_token stop = {}) const;

  /// prepare(agent, content, references, signal) for typed references.
  PreparedMessage prepare(const Target& target, const boost::json::array& content,
                          std::span<const SessionReference> references, std::stop_token stop = {},
                          WorkCounter* counter = nullptr) const;

  /// The same for raw JSON reference elements (as the golden vectors give them).
  PreparedMessage prepare_json(const Target& target, const boost::json::array& content,
                               const boost::json::array& references, std::stop_token stop = {},
                               WorkCounter* counter = nullptr) const;

private:
  PreparedMessage prepare_normalized(const boost::json::array& content, std::vector<NormalizedReference> references,
                                     std::stop_token stop, WorkCounter* counter) const;

  std::shared_ptr<SessionSource> source_;  // shared with the host, which may hold it too
  Config config_;
};

} // namespace acp::refs
