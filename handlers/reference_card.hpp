// The reference card (docs/references.md): the one visible trace of an injected session snapshot.
// A completed `read` tool call, sent live before any model output and, on replay, right after the
// user chunk of the direct message it belongs to (the one after the snapshot, or for a 0.1.1 recall
// the one just before it). The snapshot text itself never reaches the client.
#pragma once

#include "protocol/types/updates.hpp"

#include <boost/json/object.hpp>

#include <cstdint>

namespace acp::handlers {

/// Card for the snapshot event at `snapshot_seq` whose source record is `source`
/// ({kind:"session-reference", version:1, references:[…]}).
protocol::ToolCall reference_card(std::int64_t snapshot_seq, const boost::json::object& source);

/// True for a user/message source that marks an injected reference snapshot.
bool is_reference_source(const boost::json::object& source);

} // namespace acp::handlers
