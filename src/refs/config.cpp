#include "refs/config.hpp"

#include "refs/errors.hpp"
#include "support/json_number.hpp"

#include <cmath>
#include <string>

namespace acp::refs {
namespace {

std::int64_t checked(const std::optional<boost::json::value>& value, const char* name, std::int64_t fallback) {
  // `config.x ?? default`: both an absent key and null fall back to the default.
  if (!value || value->is_null()) return fallback;
  if (auto v = positive_safe_integer(*value)) return *v;
  throw SessionReferenceError(ErrorCode::invalid_config,
                              std::string("session-reference: ") + name + " must be a positive safe integer");
}

} // namespace

std::optional<std::int64_t> positive_safe_integer(const boost::json::value& value) {
  return support::json_integer(value, 1, support::kMaxSafeInteger);
}

ConfigInput ConfigInput::from_json(const boost::json::object& object) {
  ConfigInput input;
  if (auto* v = object.if_contains("maxReferences")) input.max_references = *v;
  if (auto* v = object.if_contains("candidateLimit")) input.candidate_limit = *v;
  if (auto* v = object.if_contains("maxReferenceBytes")) input.max_reference_bytes = *v;
  return input;
}

Config make_config(const ConfigInput& input) {
  Config config;
  config.max_references = checked(input.max_references, "maxReferences", kDefaultMaxReferences);
  config.candidate_limit = checked(input.candidate_limit, "candidateLimit", kDefaultCandidateLimit);
  config.max_reference_bytes = checked(input.max_reference_bytes, "maxReferenceBytes", kDefaultMaxReferenceBytes);
  // The upper bound is checked only once all three keys are known to be positive safe integers.
  if (config.max_references > kMaxReferencesLimit)
    throw SessionReferenceError(ErrorCode::invalid_config, "session-reference: maxReferences must not exceed 3");
  return config;
}

} // namespace acp::refs
