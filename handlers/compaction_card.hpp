// The compaction card: the visible trace of a compaction. A completed `think` tool call titled
// `Compacted conversation · N messages` with the first lines of the summary, sent live before the
// answer of the turn that compacted and, on replay, where the checkpoint sits in the log.
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <set>
#include <string>

namespace acp::handlers {

/// Card for the checkpoint at `checkpoint_seq` that replaced `messages` surface messages.
protocol::ToolCall compaction_card(std::int64_t checkpoint_seq, std::size_t messages, const std::string& summary);

/// The card of a checkpoint user/message read from a log: N counts its sourceEventSeqs other than
/// `compact_events` (the seqs of compact/start and compact/summary events seen before it).
protocol::ToolCall compaction_card(const boost::json::object& checkpoint_event,
                                   const std::set<std::int64_t>& compact_events);

/// True for a user/message source that marks a compaction checkpoint.
bool is_checkpoint_source(const boost::json::object& source);

} // namespace acp::handlers
