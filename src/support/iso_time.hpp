// ISO 8601 UTC timestamps with milliseconds, as JavaScript's Date.prototype.toISOString writes them.
#pragma once

#include <cstdint>
#include <string>

namespace acp::support {

/// "YYYY-MM-DDTHH:MM:SS.mmmZ" for Unix milliseconds. Times before 1970 round toward the past (as
/// JavaScript does), so the millisecond field is never negative; times outside years 0000–9999 are
/// clamped to that range so the text always has this shape.
std::string iso_time(std::int64_t unix_ms);

} // namespace acp::support
