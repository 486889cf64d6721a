// The JSON body of a streaming chat-completions request, and the consecutive-user-message merge.
//
// The body is the minimal OpenAI-compatible shape every server we target accepts: model, messages as
// {role, content} strings (a user message with images loaded: content parts, its text around each
// image and the image as `{type: "image_url", image_url: {url: "data:<type>;base64,…"}}`; an assistant message's calls in `tool_calls`, its content "" rather than
// null when it has no text, as the harness sends it; a tool message as {role, tool_call_id, content}),
// the tools offered (`tools: [{type: "function", function: {name, description, parameters}}]`),
// `stream: true` and `stream_options.include_usage` (so the last event carries token usage). Request
// assembly deliberately keeps two consecutive user messages (docs/decisions.md#references-on-the-wire);
// some servers reject that with a 400, and the provider then retries with
// merge_consecutive_user_messages().
// Pure: no I/O.
#pragma once

#include "llm/provider.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::llm {

/// Joins each run of consecutive user messages into one, texts separated by a blank line ("\n\n").
/// Other messages are copied unchanged and the order is kept.
std::vector<Message> merge_consecutive_user_messages(const std::vector<Message>& messages);

/// True when two user messages follow each other somewhere in `messages`.
bool has_consecutive_user_messages(const std::vector<Message>& messages);

/// Serialises the request body. `model` is omitted when empty (llama.cpp and Ollama serve one model).
/// `tools`, when any, go in `tools` as functions (their parameters' JSON text as it is).
std::string build_chat_request_body(std::string_view model, const std::vector<Message>& messages,
                                    std::optional<std::int64_t> max_tokens = std::nullopt,
                                    const std::vector<ToolDefinition>& tools = {});

} // namespace acp::llm
