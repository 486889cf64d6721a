// prepare() in the original's exact order (harness-compat §5.5) and render_context(), the in-memory
// part after the reads: projection (§5.6), retention (§5.9), prompt and source record (§5.7, §5.8).
#include "refs/errors.hpp"
#include "refs/parallel_reads.hpp"
#include "refs/projection.hpp"
#include "refs/retention.hpp"
#include "refs/serialization.hpp"
#include "refs/service.hpp"

namespace acp::refs {

AdditionalContext render_context(const std::vector<NormalizedReference>& references,
                                 const std::vector<store::SurfaceSnapshot>& snapshots, std::int64_t max_reference_bytes,
                                 WorkCounter* counter) {
  std::vector<RenderedSource> rendered;
  rendered.reserve(references.size());
  for (std::size_t i = 0; i < references.size(); ++i) {
    const auto& snapshot = snapshots[i];
    ProjectedConversation conversation = project(snapshot.events, counter);
    SourceHeader header;
    header.session_id = snapshot.session.id;  // the snapshot's id, not necessarily the requested one
    header.label = references[i].label;
    if (snapshot.session.cwd) header.cwd = std::string_view(*snapshot.session.cwd);
    header.captured_through_seq = snapshot.capturedThroughSeq;
    auto retained = retain(header, conversation.items, max_reference_bytes, counter);
    if (!retained)  // no partial context: one source that cannot fit fails the whole message
      throw SessionReferenceError(ErrorCode::budget_exceeded,
                                  "referenced session snapshot cannot fit the configured byte budget");
    rendered.push_back(RenderedSource{snapshot.session.id, references[i].label, snapshot.capturedThroughSeq,
                                      std::move(*retained)});
  }
  AdditionalContext context;
  context.source = build_source_record(rendered);
  context.prompt = build_prompt(rendered, counter);
  return context;
}

SessionReferenceService::SessionReferenceService(std::shared_ptr<SessionSource> source, Config config)
    : source_(std::move(source)), config_(config) {}

PreparedMessage SessionReferenceService::prepare(const Target& target, const boost::json::array& content,
                                                 std::span<const SessionReference> references, std::stop_token stop,
                                                 WorkCounter* counter) const {
  boost::json::array accepted = content;  // detached before anything can fail, as the original
  return prepare_normalized(accepted, normalize_references(target.id, references, config_.max_references),
                            std::move(stop), counter);
}

PreparedMessage SessionReferenceService::prepare_json(const Target& target, const boost::json::array& content,
                                                      const boost::json::array& references, std::stop_token stop,
                                                      WorkCounter* counter) const {
  return prepare_normalized(content, normalize_references(target.id, references, config_.max_references),
                            std::move(stop), counter);
}

PreparedMessage SessionReferenceService::prepare_normalized(const boost::json::array& content,
                                                            std::vector<NormalizedReference> references,
                                                            std::stop_token stop, WorkCounter* counter) const {
  PreparedMessage result;
  result.content = content;
  // No references: the content alone, without even a cancellation check.
  if (references.empty()) return result;
  std::vector<std::string> ids;
  ids.reserve(references.size());
  for (const auto& r : references) ids.push_back(r.session_id);
  std::vector<store::SurfaceSnapshot> snapshots = read_all_in_parallel(source_, ids, stop);
  if (stop.stop_requested())
    throw SessionReferenceError(ErrorCode::cancelled, "session reference preparation was cancelled");
  result.additional_context = render_context(references, snapshots, config_.max_reference_bytes, counter);
  // The original cannot observe a cancel during its synchronous retention; we can, and a caller that
  // gave up must not receive a context it would then have to discard by hand.
  if (stop.stop_requested())
    throw SessionReferenceError(ErrorCode::cancelled, "session reference preparation was cancelled");
  return result;
}

} // namespace acp::refs
