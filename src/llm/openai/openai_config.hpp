// Configuration of the OpenAI-compatible streaming provider (DeepSeek, OpenAI, llama.cpp, Ollama, vLLM).
//
// Plain data with the defaults docs/models.md lists, plus ConfigError: every mistake that can be detected
// without talking to the network (bad URL, plain http to a remote host, unknown provider name, missing CA
// file) is reported when the provider is constructed, so the host can exit with status 2 at start-up
// instead of failing the first prompt. Nothing here touches TLS: the SSL context is built on first use.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace acp::llm {

struct OpenAiConfig {
  std::string provider = "deepseek";  ///< "deepseek" or "openai"; written as provenance.provider
  std::string base_url;               ///< empty: https://api.deepseek.com for deepseek (required for openai)
  std::string api_key;                ///< empty: no Authorization header (loopback servers)
  std::string model;                  ///< used when Request::model is empty; deepseek defaults to deepseek-flash
  std::string ca_file;                ///< extra trusted CA (PEM), in addition to the system store
  bool allow_insecure_http = false;   ///< plain http:// to non-loopback hosts
  std::int64_t connect_timeout_ms = 10000;   ///< TCP connect + TLS handshake, per attempt
  std::int64_t idle_timeout_ms = 120000;     ///< longest wait for the next SSE *data* event (comments do not count)
  std::int64_t request_timeout_ms = 600000;  ///< overall deadline of one stream() call, retries included
  int max_retries = 3;                       ///< retries after the first attempt, only before any output
  std::int64_t retry_base_ms = 500;          ///< first backoff; doubles per retry, with jitter
};

/// A configuration that can never work; thrown by make_openai_provider().
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace acp::llm
