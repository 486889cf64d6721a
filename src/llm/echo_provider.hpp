// The offline `echo` model (docs/models.md#the-echo-model): the oracle of request assembly.
//
// It answers with a description of the request it received, streamed one word at a time, so tests,
// the demo and transcripts can see exactly which messages reached the model. Directives in the last
// user message ([[echo:sleep=MS]] / [[sleep:MS]], [[echo:stop=max_tokens|refusal]]) make it slow or
// end with another stop reason, for cancellation and stop-reason tests. When tools are offered,
// [[echo:tool=NAME {JSON arguments}]] (repeatable) makes it call them: a request whose last user
// message holds such directives, with no tool result after it yet, is answered with those calls
// (ids echo_<assistant messages so far>_<k>); the next request, carrying the results, gets the
// usual answer, which lists them.
#pragma once

#include "llm/provider.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace acp::llm {

/// The answer text for a request (pure; exposed for tests). A tool message is listed like any other
/// (role `tool`); size and preview are of a message's text alone, so an assistant message with only
/// tool calls reads `[i] assistant 0 bytes: ` (the calls are not shown; its tool messages follow).
std::string echo_answer(const Request& request);

/// The deterministic summary answering a Purpose::summary request (docs/models.md#the-echo-model):
/// `## Goal` with the number and UTF-8 bytes of the summarised messages (every message but the
/// system prompt and the final instruction), `## Focus` when the instruction carries a
/// `Focus: ` line, and `## Messages` listing the first and last three in the answer's line format.
std::string echo_summary(const Request& request);
/// The wait a [[echo:sleep=MS]] or [[sleep:MS]] directive asks for (the first one in `text`), at most 60 s.
std::chrono::milliseconds echo_sleep(std::string_view text);

/// The calls a request's [[echo:tool=NAME {JSON}]] directives ask for (empty when none, when no tool
/// is offered, or when results already follow the last user message). The arguments are the JSON
/// text as written; a directive whose JSON does not parse is passed on as written (so tests can
/// give the agent malformed arguments).
std::vector<ToolCall> echo_tool_calls(const Request& request);

/// Splits the answer into chunks that each end after a space (the last one may not).
std::vector<std::string> echo_chunks(const std::string& answer);

/// `context_window`: when set, a request estimated (llm/token_estimate.hpp) above it is refused
/// with a 400 naming the maximum context length, as real servers do.
std::unique_ptr<Provider> make_echo_provider(boost::asio::any_io_executor executor, std::chrono::milliseconds delay,
                                             std::optional<std::int64_t> context_window = std::nullopt);

} // namespace acp::llm
