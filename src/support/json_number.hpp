// The one reader of an integer from a JSON value (wire params, log records, configuration, provider
// streams). Boost.JSON gives a number as int64, uint64 or double depending on its text; all three
// are read here, and every range check happens before a conversion: converting a double outside
// the target's range is undefined behaviour.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <limits>
#include <optional>

namespace acp::support {

inline constexpr std::int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1 (JavaScript)

/// The integer `v` holds when it lies in [min, max]: an int64 or uint64, or a double with no
/// fractional part (JavaScript has one number type: 5.0 is 5) and at most 2^53 - 1 in magnitude,
/// beyond which a double no longer says which integer its text spelt. Anything else — not a
/// number, a fraction, NaN or infinity (never produced by the parser, but possible in a built
/// value), out of range — is nullopt. -0.0 reads as 0.
std::optional<std::int64_t> json_integer(const boost::json::value& v,
                                         std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                         std::int64_t max = std::numeric_limits<std::int64_t>::max());

} // namespace acp::support
