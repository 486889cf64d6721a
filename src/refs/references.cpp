// normalizeReferences (docs/session-references.md#preparing-references, step 1): per element in order, then the
// distinct-id cap.
#include "refs/errors.hpp"
#include "refs/json_string.hpp"
#include "refs/service.hpp"

#include <unordered_set>

namespace acp::refs {
namespace {

class Normalizer {
public:
  Normalizer(std::string_view target_id, std::int64_t max_references)
      : target_id_(target_id), max_references_(max_references) {}

  void add(std::string_view session_id, const std::optional<std::string_view>& label,
           std::optional<std::int64_t> anchor_seq = std::nullopt) {
    // The self check precedes the duplicate check, so a repeated self-reference still fails.
    if (session_id == target_id_)
      throw SessionReferenceError(ErrorCode::self_reference,
                                  "session " + json_string(target_id_) + " cannot reference itself");
    // The first mention's label wins, and so does its anchor (or its lack of one): one snapshot per
    // session, centred where the user first pointed.
    if (!seen_.insert(std::string(session_id)).second) return;
    out_.push_back(NormalizedReference{std::string(session_id), std::string(label ? *label : session_id), anchor_seq});
  }

  std::vector<NormalizedReference> finish() {
    if (static_cast<std::int64_t>(out_.size()) > max_references_)
      throw SessionReferenceError(ErrorCode::too_many,
                                  "a message may reference at most " + std::to_string(max_references_) + " sessions");
    return std::move(out_);
  }

private:
  std::string_view target_id_;
  std::int64_t max_references_;
  std::unordered_set<std::string> seen_;
  std::vector<NormalizedReference> out_;
};

} // namespace

std::vector<NormalizedReference> normalize_references(std::string_view target_id,
                                                      std::span<const SessionReference> references,
                                                      std::int64_t max_references) {
  Normalizer n(target_id, max_references);
  for (const auto& r : references) {
    std::optional<std::string_view> label;
    if (r.label) label = *r.label;
    n.add(r.session_id, label, r.anchor_seq);
  }
  return n.finish();
}

std::vector<NormalizedReference> normalize_references(std::string_view target_id, const boost::json::array& references,
                                                      std::int64_t max_references) {
  Normalizer n(target_id, max_references);
  for (const auto& element : references) {
    // Arrays are objects in JavaScript: they pass the first check and fail the field check.
    if (!element.is_object() && !element.is_array())
      throw SessionReferenceError(ErrorCode::invalid_reference, "session reference must be an object");
    const boost::json::value* id = element.is_object() ? element.get_object().if_contains("sessionId") : nullptr;
    const boost::json::value* label = element.is_object() ? element.get_object().if_contains("label") : nullptr;
    // `label !== undefined && typeof label !== 'string'`: an explicit null is not a string either.
    if (!id || !id->is_string() || (label && !label->is_string()))
      throw SessionReferenceError(ErrorCode::invalid_reference,
                                  "session reference must contain a string sessionId and optional string label");
    std::optional<std::string_view> label_text;
    if (label) label_text = std::string_view(label->get_string());
    n.add(std::string_view(id->get_string()), label_text);
  }
  return n.finish();
}

} // namespace acp::refs
