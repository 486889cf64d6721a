// HTTP status + body → the codes of docs/decisions.md#errors-on-the-wire; Retry-After; backoff bounds.
#include "llm/openai/error_mapping.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::llm;

BOOST_AUTO_TEST_SUITE(error_mapping)

BOOST_AUTO_TEST_CASE(status_codes_map_to_contract_codes) {
  auto code = [](int status) { return map_http_error(status, "", "").code(); };
  BOOST_TEST(code(400) == "PROVIDER_BAD_REQUEST");
  BOOST_TEST(code(422) == "PROVIDER_BAD_REQUEST");
  BOOST_TEST(code(404) == "PROVIDER_BAD_REQUEST");
  BOOST_TEST(code(401) == "AUTH_REQUIRED");
  BOOST_TEST(code(403) == "AUTH_REQUIRED");
  BOOST_TEST(code(402) == "PROVIDER_INSUFFICIENT_BALANCE");
  BOOST_TEST(code(429) == "PROVIDER_RATE_LIMITED");
  BOOST_TEST(code(500) == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(code(503) == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(code(408) == "PROVIDER_TIMEOUT");
  BOOST_TEST(code(301) == "PROVIDER_UNAVAILABLE");
  BOOST_TEST(map_http_error(402, "", "").http_status() == 402);
}

BOOST_AUTO_TEST_CASE(provider_message_is_kept) {
  auto e = map_http_error(402, "Payment Required",
                          R"({"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}})");
  BOOST_TEST(std::string(e.what()) == "Insufficient Balance");
  BOOST_TEST(extract_error_message(R"({"error":"plain string"})") == "plain string");
  BOOST_TEST(extract_error_message(R"({"message":"top level"})") == "top level");
  BOOST_TEST(extract_error_message(R"({"detail":"fastapi"})") == "fastapi");
  BOOST_TEST(extract_error_message("<html>bad gateway</html>") == "");
}

BOOST_AUTO_TEST_CASE(bodies_without_message_get_a_descriptive_fallback) {
  std::string m = map_http_error(503, "Service Unavailable", "<html>nginx</html>").what();
  BOOST_TEST(m.find("HTTP 503 Service Unavailable") != std::string::npos);
  std::string t = map_http_error(500, "", "upstream exploded").what();
  BOOST_TEST(t.find("upstream exploded") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(retryable_statuses) {
  BOOST_TEST(is_retryable_status(408));  // docs/decisions.md#command-line-and-configuration
  BOOST_TEST(is_retryable_status(429));
  BOOST_TEST(is_retryable_status(500));
  BOOST_TEST(is_retryable_status(503));
  BOOST_TEST(!is_retryable_status(400));
  BOOST_TEST(!is_retryable_status(401));
  BOOST_TEST(!is_retryable_status(402));
  BOOST_TEST(!is_retryable_status(422));
}

BOOST_AUTO_TEST_CASE(consecutive_message_complaints_are_recognised) {
  BOOST_TEST(names_consecutive_messages("deepseek-reasoner does not support successive user or assistant messages"));
  BOOST_TEST(names_consecutive_messages("Consecutive user messages are not allowed"));
  BOOST_TEST(!names_consecutive_messages("invalid model"));
}

BOOST_AUTO_TEST_CASE(retry_after_seconds) {
  BOOST_TEST(parse_retry_after("2").value().count() == 2000);
  BOOST_TEST(parse_retry_after(" 0 ").value().count() == 0);
  BOOST_TEST(!parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
  BOOST_TEST(!parse_retry_after("-1"));
}

BOOST_AUTO_TEST_CASE(backoff_is_exponential_with_bounded_jitter_and_honours_retry_after) {
  std::mt19937_64 rng(42);
  for (int retry = 0; retry < 5; ++retry)
    for (int i = 0; i < 50; ++i) {
      auto d = backoff_delay(retry, 100, std::nullopt, rng).count();
      BOOST_TEST(d >= (100 << retry) / 2);
      BOOST_TEST(d <= (100 << retry));
    }
  BOOST_TEST(backoff_delay(0, 100, std::chrono::milliseconds(3000), rng).count() == 3000);
  BOOST_TEST(backoff_delay(30, 500, std::nullopt, rng).count() <= 30000);
}

BOOST_AUTO_TEST_SUITE_END()
