// Our extension methods (names start with "_", https://agentclientprotocol.com/protocol/extensibility); schemas in schemas/.
#pragma once

#include "protocol/types/content.hpp"

namespace acp::protocol {

/// _dsh/sessionReference/candidates: sessions the target session may reference.
struct CandidatesRequest {
  std::string sessionId;
  std::optional<std::string> query;
  std::optional<boost::json::value> limit;  ///< validated by the reference service (positive safe integer)
  std::optional<bool> matchTitles;          ///< the query also matches titles (as `/ref` does); default false
  std::optional<bool> matchContent;         ///< the query also finds sessions by what was said (docs/recall.md)
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(CandidatesRequest, (), (sessionId, query, limit, matchTitles, matchContent, _meta))

/// Where a candidate found by content matched.
struct ContentMatchInfo {
  std::int64_t seq = 0;
  std::string kind;     ///< user, agent, tool, result or summary
  std::string snippet;  ///< quoted from the session: untrusted
};
BOOST_DESCRIBE_STRUCT(ContentMatchInfo, (), (seq, kind, snippet))

struct ReferenceCandidate {
  std::string sessionId;
  std::string label;
  std::optional<std::string> cwd;
  std::int64_t createdAt = 0;  ///< Unix ms, as the original reports it
  std::string uri;
  std::string mention;  ///< ready to paste: @[label](dsh-session:…)
  std::optional<ContentMatchInfo> match;  ///< found by content (matchContent): where
};
BOOST_DESCRIBE_STRUCT(ReferenceCandidate, (), (sessionId, label, cwd, createdAt, uri, mention, match))

struct CandidatesResponse {
  std::vector<ReferenceCandidate> candidates;
};
BOOST_DESCRIBE_STRUCT(CandidatesResponse, (), (candidates))

} // namespace acp::protocol
