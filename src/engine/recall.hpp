// The `recall` tool: the agent finds earlier sessions (the person's own, and teammates' shared
// ones in a PostgreSQL store) by what was said in them, then references chosen ones. A reference
// enters the conversation exactly as a person's mention does: the reference service prepares the
// same bounded, untrusted snapshot, the turn logs it as a session-reference message (after the
// step's tool results, where the model reads it next) and the client shows the same card, live and
// on replay (docs/recall.md).
#pragma once

#include "engine/tool_runner.hpp"
#include "llm/provider.hpp"
#include "refs/types.hpp"

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace acp::engine {

inline constexpr std::string_view kRecallTool = "recall";

inline constexpr std::size_t kMaxRecallQueryBytes = 500;
inline constexpr std::size_t kRecallResults = 8;

/// One call: a search (`query`) or references to sessions found before (`sessions`), never both.
struct RecallRequest {
  std::string query;
  std::vector<refs::SessionReference> sessions;
};

const llm::ToolDefinition& recall_definition();

/// The call's arguments checked; a string is the error the model reads. `max_references` bounds
/// `sessions` as a prompt's mentions are bounded.
std::variant<RecallRequest, std::string> read_recall_request(const std::string& arguments, std::size_t max_references);

/// What the model reads for a search: each session's id, label, cwd, date, and where it matched,
/// the quoted snippets marked as data from stored sessions.
std::string describe_recall_matches(const std::vector<refs::ContentMatch>& matches, std::string_view query);

/// What the model reads when references were prepared: which sessions, and that their snapshots
/// follow as a separate message.
std::string describe_recall_references(const std::vector<refs::SessionReference>& sessions);

} // namespace acp::engine
