// Plain value types shared by the parts of the session-reference service.
//
// No ACP types and no behaviour: a target session, a requested reference, a listing candidate, and
// the result of prepare(). The host converts its wire structures to and from these.
#pragma once

#include "store/session_types.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace acp::refs {

/// The session a message is being prepared for (the original's `agent`: its id and header cwd).
struct Target {
  std::string id;
  std::optional<std::string> cwd;
};

/// A reference as requested by the user: a session id, an optional display label, and an optional
/// anchor (`#seq=N`: the snapshot centres on that place instead of ending with the newest message).
struct SessionReference {
  std::string session_id;
  std::optional<std::string> label;
  std::optional<std::int64_t> anchor_seq = std::nullopt;
};

/// A reference after dedupe: the label defaults to the id; an empty label stays empty. The first
/// mention of a session decides its label and its anchor alike.
struct NormalizedReference {
  std::string session_id;
  std::string label;
  std::optional<std::int64_t> anchor_seq = std::nullopt;
};

/// One row of list_candidates(); JSON keys sessionId, label, cwd (omitted when absent), createdAt.
struct Candidate {
  std::string session_id;
  std::string label;
  std::optional<std::string> cwd;
  std::int64_t created_at = 0;

  boost::json::object to_json() const;
};

/// A session found by what was said in it (SessionReferenceService::search_content): the
/// candidate row and where it matched best.
struct ContentMatch {
  Candidate candidate;
  store::SessionListing listing;  ///< the store's row (title, times, owner, sharing)
  std::int64_t seq = 0;   ///< the event that matched best
  std::string kind;       ///< store::text_kind_name of that text
  std::string snippet;    ///< quoted from the session: untrusted, one line, valid UTF-8
};

/// The context to inject ahead of the direct message: the durable source record
/// `{kind:"session-reference",version:1,references:[…]}` and the model-facing prompt text.
struct AdditionalContext {
  boost::json::object source;
  std::string prompt;

  /// {"source": …, "content": [{"type":"text","text": prompt}]} in the original's key order.
  boost::json::object to_json() const;
};

/// Result of prepare(): a detached copy of the content and zero or one additional context.
struct PreparedMessage {
  boost::json::array content;
  std::optional<AdditionalContext> additional_context;

  /// {"content": …, "additionalContext"?: …}
  boost::json::object to_json() const;
};

} // namespace acp::refs
