#include "support/iso_time.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace acp::support {

std::string iso_time(std::int64_t unix_ms) {
  constexpr std::int64_t kMin = -62167219200000;  // 0000-01-01T00:00:00.000Z
  constexpr std::int64_t kMax = 253402300799999;  // 9999-12-31T23:59:59.999Z
  unix_ms = std::clamp(unix_ms, kMin, kMax);
  // Floor division: -1 ms is 1969-12-31T23:59:59.999Z, not second 0 with millisecond -1.
  std::int64_t secs = unix_ms / 1000;
  std::int64_t ms = unix_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];  // large enough for any int fields: GCC checks the worst case
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

} // namespace acp::support
