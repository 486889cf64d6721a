// messageId of user, agent and thought chunks (https://agentclientprotocol.com/protocol/prompt-turn:
// chunks of one message share an id; a new id starts a new message).
//
// The id is derived, not stored: a UUID-shaped string (version 8, RFC 9562's for ids of one's own
// making) from SHA-256 of the session id and the message's place in the log — the seq of a user
// message's event, the (turn, step, block index) of an assistant text or reasoning block, the seq of
// the turn/end a failure note replays from. A live turn knows the place of what it streams before
// it is written, and session/load reads it back from the events, so a client is told the same id for
// the same message live and on every replay, in any process, without a field in the log.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace acp::handlers {

/// The id of the message at `place` (e.g. "user/12", "text/3/1/0") in the session `session_id`.
std::string message_id(std::string_view session_id, std::string_view place);

/// The place of an assistant block: `kind` "text", "reasoning" or "image".
std::string block_place(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t block);

} // namespace acp::handlers
