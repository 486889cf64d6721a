// Finding a stored session for load and resume: validates the requested cwd against the stored
// one, and turns every store outcome into its wire error (unknown → -32002, unreadable →
// SESSION_LOG_CORRUPT, cwd-less or mismatched cwd → -32602).
#pragma once

#include "handlers/handler_context.hpp"

#include <boost/asio/awaitable.hpp>

namespace acp::handlers {

boost::asio::awaitable<store::SessionHeader> find_stored_session(HandlerContext& ctx, const std::string& session_id,
                                                                 const std::string& cwd);

/// Attaches a stored session to this connection (load and resume).
void attach_session(HandlerContext& ctx, const store::SessionHeader& header,
                    const std::optional<std::vector<std::string>>& additional_directories);

/// Unix ms → ISO 8601 UTC with milliseconds.
std::string iso_time(std::int64_t unix_ms);

} // namespace acp::handlers
