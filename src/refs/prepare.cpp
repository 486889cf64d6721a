// prepare() in the original's exact order (docs/session-references.md#preparing-references) and render_context(),
// the in-memory part after the reads: projection, retention, prompt and source record (the sections
// of the same name in docs/session-references.md).
#include "refs/errors.hpp"
#include "refs/parallel_reads.hpp"
#include "refs/projection.hpp"
#include "refs/retention.hpp"
#include "refs/serialization.hpp"
#include "refs/service.hpp"
#include "support/memory.hpp"

namespace acp::refs {

namespace {

struct SourceView {
  std::string_view session_id;
  std::optional<std::string_view> cwd;
  std::optional<std::int64_t> captured_through_seq;
  const std::vector<ProjectedItem>& items;
  std::optional<std::size_t> anchor;  ///< set by an anchored read (ProjectedSource::anchor)
};

RenderedSource render_source(const NormalizedReference& reference, const SourceView& source,
                             std::int64_t max_reference_bytes, WorkCounter* counter) {
  SourceHeader header;
  header.session_id = source.session_id;  // the snapshot's id, not necessarily the requested one
  header.label = reference.label;
  header.cwd = source.cwd;
  header.captured_through_seq = source.captured_through_seq;
  header.anchored = reference.anchor_seq.has_value();
  if (header.anchored) header.anchor_index = source.anchor;
  auto retained = retain(header, source.items, max_reference_bytes, counter);
  if (!retained)  // no partial context: one source that cannot fit fails the whole message
    throw SessionReferenceError(ErrorCode::budget_exceeded,
                                "referenced session snapshot cannot fit the configured byte budget");
  return RenderedSource{std::string(source.session_id), reference.label, source.captured_through_seq,
                        std::move(*retained), reference.anchor_seq};
}

AdditionalContext assemble(const std::vector<RenderedSource>& rendered, WorkCounter* counter) {
  AdditionalContext context;
  context.source = build_source_record(rendered);
  context.prompt = build_prompt(rendered, counter);
  return context;
}

[[noreturn]] void cancelled() {
  throw SessionReferenceError(ErrorCode::cancelled, "session reference preparation was cancelled");
}

} // namespace

AdditionalContext render_context(const std::vector<NormalizedReference>& references,
                                 const std::vector<ProjectedSource>& sources, std::int64_t max_reference_bytes,
                                 WorkCounter* counter) {
  std::vector<RenderedSource> rendered;
  rendered.reserve(references.size());
  for (std::size_t i = 0; i < references.size(); ++i) {
    const ProjectedSource& s = sources[i];
    std::optional<std::string_view> cwd;
    if (s.cwd) cwd = std::string_view(*s.cwd);
    rendered.push_back(render_source(references[i],
                                     SourceView{s.session_id, cwd, s.captured_through_seq, s.conversation.items, s.anchor},
                                     max_reference_bytes, counter));
  }
  return assemble(rendered, counter);
}

AdditionalContext render_context(const std::vector<NormalizedReference>& references,
                                 const std::vector<store::SurfaceSnapshot>& snapshots, std::int64_t max_reference_bytes,
                                 WorkCounter* counter) {
  std::vector<RenderedSource> rendered;
  rendered.reserve(references.size());
  for (std::size_t i = 0; i < references.size(); ++i) {
    const auto& snapshot = snapshots[i];
    ProjectedConversation conversation = project(snapshot.events, counter);
    std::optional<std::string_view> cwd;
    if (snapshot.session.cwd) cwd = std::string_view(*snapshot.session.cwd);
    std::optional<std::size_t> anchor;
    if (references[i].anchor_seq) anchor = anchor_by_item_seqs(conversation.items, *references[i].anchor_seq);
    rendered.push_back(render_source(
        references[i], SourceView{snapshot.session.id, cwd, snapshot.capturedThroughSeq, conversation.items, anchor},
        max_reference_bytes, counter));
  }
  return assemble(rendered, counter);
}

ProjectedSource SessionSource::read_anchored(const std::string& session_id, std::int64_t max_reference_bytes,
                                             std::int64_t anchor_seq, std::stop_token stop) {
  ProjectedSource source = read_projected(session_id, max_reference_bytes, std::move(stop));
  source.anchor = anchor_by_item_seqs(source.conversation.items, anchor_seq);
  return source;
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
  std::vector<std::optional<std::int64_t>> anchors;
  ids.reserve(references.size());
  anchors.reserve(references.size());
  for (const auto& r : references) {
    ids.push_back(r.session_id);
    anchors.push_back(r.anchor_seq);
  }
  // The readers ran on threads of their own, whose malloc arenas keep what a big log's parse freed
  // (glibc returns arena memory only on trim): give it back once the sources are gone, however
  // this call ends.
  struct GiveBack {
    ~GiveBack() { support::give_back_memory(); }
  } give_back;
  {
    std::vector<ProjectedSource> sources = read_all_in_parallel(*source_, ids, anchors, config_.max_reference_bytes, stop);
    if (stop.stop_requested()) cancelled();
    result.additional_context = render_context(references, sources, config_.max_reference_bytes, counter);
  }
  // The original cannot observe a cancel during its synchronous retention; we can, and a caller that
  // gave up must not receive a context it would then have to discard by hand.
  if (stop.stop_requested()) cancelled();
  return result;
}

} // namespace acp::refs
