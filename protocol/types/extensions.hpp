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
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(CandidatesRequest, (), (sessionId, query, limit, matchTitles, _meta))

struct ReferenceCandidate {
  std::string sessionId;
  std::string label;
  std::optional<std::string> cwd;
  std::int64_t createdAt = 0;  ///< Unix ms, as the original reports it
  std::string uri;
  std::string mention;  ///< ready to paste: @[label](dsh-session:…)
};
BOOST_DESCRIBE_STRUCT(ReferenceCandidate, (), (sessionId, label, cwd, createdAt, uri, mention))

struct CandidatesResponse {
  std::vector<ReferenceCandidate> candidates;
};
BOOST_DESCRIBE_STRUCT(CandidatesResponse, (), (candidates))

} // namespace acp::protocol
