// Time formatting shared by session/list and the /ref answer.
#pragma once

#include <cstdint>
#include <string>

namespace acp::handlers {

/// Unix ms → ISO 8601 UTC with milliseconds.
std::string iso_time(std::int64_t unix_ms);

} // namespace acp::handlers
