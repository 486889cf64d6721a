// Value types shared by the session store and its readers (the reference service, the ACP host).
// Plain data only: no I/O, no ACP types.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace acp::store {

/// The header record of a session log (docs/store-format.md#header).
struct SessionHeader {
  std::int64_t version = 0;
  std::string id;
  std::int64_t createdAt = 0;  ///< Unix ms
  std::optional<std::string> cwd;
  std::optional<std::string> parentSession;
  std::optional<std::int64_t> seedLength;
  std::int64_t delegationDepth = 0;
  std::optional<std::string> origin;       ///< 0.1.1: "subagent" marks a subagent child
  std::optional<std::string> agentPreset;  ///< 0.1.1: the preset the session was composed from
};

/// readSurface(): the folded current surface of one session (docs/store-format.md#reading-a-surface).
struct SurfaceSnapshot {
  SessionHeader session;
  std::optional<std::int64_t> capturedThroughSeq;  ///< seq of the last raw event; nullopt for an empty log
  std::vector<boost::json::object> events;         ///< full event records, in surface order
};

/// One row of listSessions(), served from the listing index (no log read).
struct SessionListing {
  SessionHeader header;
  std::optional<std::string> title;  ///< latest session/title, if any (an empty title stays empty)
  std::int64_t updatedAt = 0;        ///< Unix ms of the last event (createdAt if none)
  std::uint64_t sizeBytes = 0;
  /// A PostgreSQL store: the role that owns the session, and whether its owner shared it.
  std::optional<std::string> owner;
  bool shared = false;
  /// Set by StoreSet: this process cannot write it (its root is read-only, or it is someone else's).
  bool read_only = false;
};

} // namespace acp::store
