#include "support/json_number.hpp"

namespace acp::support {

std::optional<std::int64_t> json_integer(const boost::json::value& v, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {
    if (max < 0 || v.get_uint64() > static_cast<std::uint64_t>(max)) return std::nullopt;
    n = static_cast<std::int64_t>(v.get_uint64());
  } else if (v.is_double()) {
    const double d = v.get_double();
    constexpr auto kSafe = static_cast<double>(kMaxSafeInteger);
    // The negated test also refuses NaN; inside ±2^53 the cast is defined and exact.
    if (!(d >= -kSafe && d <= kSafe)) return std::nullopt;
    n = static_cast<std::int64_t>(d);
    if (static_cast<double>(n) != d) return std::nullopt;  // a fraction
  } else {
    return std::nullopt;
  }
  if (n < min || n > max) return std::nullopt;
  return n;
}

} // namespace acp::support
