// Request assembly: the stored current surface of a session → the role-tagged messages a provider
// receives (contracts.md §5). Pure.
//
// Every user-role surface message (direct prompts, injected reference snapshots, compaction
// checkpoints, steering) becomes a user message; assistant messages keep their text, drop reasoning,
// and carry tool calls and results as text (we offer the model no tools), so roles alternate except
// for the deliberate snapshot-then-prompt pair.
#pragma once

#include "llm/provider.hpp"

#include <boost/json/object.hpp>

#include <vector>

namespace acp::handlers {

/// Appends the conversation of `surface_events` (full event records, in surface order) to `out`.
void append_surface_messages(const std::vector<boost::json::object>& surface_events, std::vector<llm::Message>& out);

/// Text of the `text` blocks of a content array, joined with '\n'.
std::string content_text(const boost::json::value& content);

} // namespace acp::handlers
