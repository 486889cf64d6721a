// Factory of the OpenAI-compatible streaming chat-completions provider.
//
// This header is deliberately light (no Beast, no OpenSSL): the host includes it next to the echo
// provider. The returned Provider POSTs `{base_url}/chat/completions` with `stream: true` over
// HTTP/1.1 (TLS for https), relays `delta.content` / `delta.reasoning_content` to the sink as they
// arrive, retries before any output (docs/decisions.md#command-line-and-configuration), and maps failures to the
// codes of docs/decisions.md#errors-on-the-wire.
// I/O objects are created on `executor`; completions resume on the awaiting coroutine's executor (the
// connection's strand), so the sink runs there. One provider may serve concurrent streams.
#pragma once

#include "llm/openai/openai_config.hpp"
#include "llm/provider.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>

namespace acp::llm {

/// Validates `config` (throws ConfigError) and returns the provider. Does not touch the network or TLS.
std::unique_ptr<Provider> make_openai_provider(const OpenAiConfig& config, boost::asio::any_io_executor executor);

} // namespace acp::llm
