// From what went wrong on the wire to the stable codes of the error table (docs/decisions.md#errors-on-the-wire), and whether to retry.
//
// HTTP failures keep the provider's own error message (users otherwise see "Internal error"); the
// code follows the status: 400/404/413/422 → PROVIDER_BAD_REQUEST, 401/403 → AUTH_REQUIRED (the host
// answers -32000), 402 → PROVIDER_INSUFFICIENT_BALANCE, 408 → PROVIDER_TIMEOUT, 429 →
// PROVIDER_RATE_LIMITED, 5xx → PROVIDER_UNAVAILABLE. Retrying is decided here too: only 408, 429 and
// 5xx are retryable statuses, honouring Retry-After; the caller additionally refuses any retry once
// output has reached the sink. Pure: no I/O.
#pragma once

#include "llm/provider.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace acp::llm {

/// The provider's message in an error body: `error.message`, `error` as a string, `message` or `detail`.
/// Empty when the body has none (not JSON, or another shape).
std::string extract_error_message(std::string_view body);

/// The ProviderError for a non-2xx response. `reason` is the HTTP reason phrase (for bodies without a
/// message).
ProviderError map_http_error(int status, std::string_view reason, std::string_view body);

/// 408, 429 and 5xx: transient by definition.
bool is_retryable_status(int status) noexcept;

/// True when a 400 message complains about successive/consecutive (user) messages
/// (docs/decisions.md#references-on-the-wire).
bool names_consecutive_messages(std::string_view message);

/// Retry-After as delta-seconds (HTTP dates are not used by these APIs and are ignored).
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

/// Backoff before retry number `retry` (0-based): retry_after when the server gave one, otherwise
/// base·2^retry scaled by a random factor in [0.5, 1] ("equal jitter"), capped at 30 s.
std::chrono::milliseconds backoff_delay(int retry, std::int64_t base_ms, std::optional<std::chrono::milliseconds> retry_after,
                                        std::mt19937_64& rng);

} // namespace acp::llm
