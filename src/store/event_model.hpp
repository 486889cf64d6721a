// The normalised event model: the one shape every consumer of a log reads (fold, conversation,
// replay, references, titles, repair, compaction), whichever store generation wrote the line.
//
// It is the 45fc shape (docs/store-format.md#event-types) extended with what 0.1.1 adds
// (docs/store-format.md#release-011-shapes), so a 45fc line is already normalised and costs nothing
// here. A 0.1.1 line is rewritten in place when it is read:
//   assistant/message  data.message{content, source, id}  -> data{content, provenance, id}
//   tool/result        data.message.content[0] tool-result -> data{callId, content, isError, id}
//   turn/end           reason.error                        -> reason.failure
//   compaction/start|summary|end                           -> compact/start|summary|end (+compactionId;
//                                                             turn may be null)
// Everything else (user/message {content, source, role, id}, tool/call, todo/write, session/title,
// compaction/prune, image content blocks {type:"image", attachment}) is the same in both.
//
// Writing goes the other way: a 0.1 root gets each normalised record in the shape 0.1.1 writes
// (to_v01_record), a 45fc root gets it as it is.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::store {

/// Rewrites a 0.1.1-shaped event into the normalised model, in place; a normalised event is left
/// as it is. A malformed 0.1.1 payload is left untouched (consumers then find nothing in it).
/// Keeps the envelope's `ignorable` marker (consulted here). Returns true when the type is unknown to both
/// generations (the caller logs it once per type unless it was marked ignorable).
bool normalise_event(boost::json::object& event);

/// Types the 0.1.1 harness knows (docs/store-format.md#release-011-shapes), the 45fc ones it
/// migrates, the 45fc types we read and write ourselves (compact/*, prompt/blocked), and our own
/// `dsh-acp/…` types (marked ignorable when written; older 45fc logs hold them unmarked).
bool is_known_event_type(std::string_view type);

/// Logs the first occurrence of an unknown, non-ignorable event type in this process (warn).
void note_unknown_event_type(std::string_view type, const std::string& path);

/// What the 0.1 writer adds to a normalised record before it is written: a message id on
/// user/message, assistant/message and tool/result, the compaction's id on compact/* and on the
/// checkpoint's source. `compaction_id` is the open compaction's id (minted at compact/start).
void assign_v01_ids(boost::json::object& record, std::string& compaction_id);

/// The record in the shape 0.1.1 writes (docs/store-format.md#release-011-shapes,
/// docs/store-format.md#crash-repair). `closer`: a crash-repair tool/result (its own id, key order
/// and envelope order). nullopt: the record is written as it is.
std::optional<boost::json::object> to_v01_record(const boost::json::object& record, bool closer = false);

/// A fresh random UUID (v4), as the harness mints message and compaction ids.
std::string random_uuid();

} // namespace acp::store
