#include "llm/openai/error_mapping.hpp"
#include "llm/openai/endpoint.hpp"

#include "support/ascii.hpp"
#include "support/json_text.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>

namespace acp::llm {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::string string_member(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it != o.end() && it->value().is_string())
    return std::string(it->value().get_string());
  return {};
}

} // namespace

std::string extract_error_message(std::string_view body) {
  boost::system::error_code ec;
  auto v = support::parse_json(trim(body), ec);
  if (ec || !v.is_object())
    return {};
  const auto& o = v.get_object();
  if (auto it = o.find("error"); it != o.end()) {
    if (it->value().is_string())
      return std::string(it->value().get_string());
    if (it->value().is_object())
      if (auto m = string_member(it->value().get_object(), "message"); !m.empty())
        return m;
  }
  if (auto m = string_member(o, "message"); !m.empty())
    return m;
  return string_member(o, "detail");  // FastAPI-based servers
}

ProviderError map_http_error(int status, std::string_view reason, std::string_view body) {
  std::string code;
  std::string fallback;
  if (status == 401 || status == 403) {
    code = "AUTH_REQUIRED";
    fallback = "the provider rejected the API key";
  } else if (status == 402) {
    code = "PROVIDER_INSUFFICIENT_BALANCE";
    fallback = "insufficient balance on the provider account";
  } else if (status == 408) {
    code = "PROVIDER_TIMEOUT";
    fallback = "the provider timed out";
  } else if (status == 429) {
    code = "PROVIDER_RATE_LIMITED";
    fallback = "rate limited by the provider";
  } else if (status >= 500) {
    code = "PROVIDER_UNAVAILABLE";
    fallback = "the provider is unavailable";
  } else if (status >= 400) {
    code = "PROVIDER_BAD_REQUEST";
    fallback = "the provider rejected the request";
  } else {
    code = "PROVIDER_UNAVAILABLE";
    fallback = "unexpected response from the provider (redirects are not followed)";
  }
  std::string message = extract_error_message(body);
  if (message.empty()) {
    message = fallback + " (HTTP " + std::to_string(status);
    if (!reason.empty())
      message += " " + std::string(reason);
    message += ")";
    // A short plain-text body (proxies, llama.cpp) is usually the only explanation there is.
    auto text = trim(body);
    if (!text.empty() && text.size() <= 300 && text.front() != '<' && text.front() != '{')
      message += ": " + std::string(text);
  }
  return ProviderError(std::move(code), std::move(message), status);
}

bool is_retryable_status(int status) noexcept { return status == 408 || status == 429 || status >= 500; }

bool names_consecutive_messages(std::string_view message) {
  auto m = support::ascii_lower(message);
  return m.find("successive") != std::string::npos || m.find("consecutive") != std::string::npos;
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value) {
  value = trim(value);
  if (value.empty() || value.size() > 9)
    return std::nullopt;
  std::int64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9')
      return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  return std::chrono::milliseconds(seconds * 1000);
}

std::chrono::milliseconds backoff_delay(int retry, std::int64_t base_ms, std::optional<std::chrono::milliseconds> retry_after,
                                        std::mt19937_64& rng) {
  constexpr std::int64_t kCapMs = 30000;
  if (retry_after)
    return *retry_after;
  std::int64_t full = std::min<std::int64_t>(kCapMs, base_ms << std::min(retry, 20));
  std::uniform_int_distribution<std::int64_t> jitter(full / 2, full);
  return std::chrono::milliseconds(jitter(rng));
}

} // namespace acp::llm
