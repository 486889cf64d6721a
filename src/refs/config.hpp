// Configuration of the session-reference service and its validation
// (docs/session-references.md#configuration-and-errors).
//
// Configuration arrives from flags, a config file or, in the golden vectors, as raw JSON that may be
// missing, null, fractional, negative or beyond 2^53. ConfigInput therefore keeps each key as an
// optional JSON value, and make_config() applies the original's checks in its exact order so the
// first bad key is the one reported. Pure functions; no state.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>

namespace acp::refs {

inline constexpr std::int64_t kMaxReferencesLimit = 3;
inline constexpr std::int64_t kDefaultMaxReferences = 3;
inline constexpr std::int64_t kDefaultCandidateLimit = 50;
inline constexpr std::int64_t kDefaultMaxReferenceBytes = 65536;

/// A validated configuration.
struct Config {
  std::int64_t max_references = kDefaultMaxReferences;
  std::int64_t candidate_limit = kDefaultCandidateLimit;
  std::int64_t max_reference_bytes = kDefaultMaxReferenceBytes;
};

/// Unvalidated input: nullopt (key absent) and JSON null both take the default.
struct ConfigInput {
  std::optional<boost::json::value> max_references;
  std::optional<boost::json::value> candidate_limit;
  std::optional<boost::json::value> max_reference_bytes;

  /// Reads the camelCase keys maxReferences, candidateLimit, maxReferenceBytes; other keys are ignored.
  static ConfigInput from_json(const boost::json::object& object);
};

/// Validates in the order maxReferences, candidateLimit, maxReferenceBytes (each a positive safe
/// integer), then maxReferences <= 3. Throws SessionReferenceError(invalid_config).
Config make_config(const ConfigInput& input);

/// Number.isSafeInteger(v) && v > 0 for a JSON value (3.0 counts as 3, as in JavaScript).
std::optional<std::int64_t> positive_safe_integer(const boost::json::value& value);

} // namespace acp::refs
