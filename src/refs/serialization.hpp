// The model-facing prompt and the durable source record (docs/session-references.md#the-model-facing-prompt,
// docs/session-references.md#data-object-and-source-record).
//
// The prompt is the fixed 287-byte preamble, the tag-safe JSON array of the retained data objects and
// the fixed suffix; the data text never contains a literal `<`, so the prompt holds exactly one
// opening and one closing framing tag. The source record lists per-reference stats in the
// original's key order. Pure functions.
#pragma once

#include "refs/retention.hpp"

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace acp::refs {

extern const std::string_view kPromptPrefix;  ///< "## Referenced sessions\n\n…<referenced-sessions>\n"
extern const std::string_view kPromptSuffix;  ///< "\n</referenced-sessions>"

/// One rendered source: its data object JSON, the fields copied into the record, and its stats.
struct RenderedSource {
  std::string session_id;  ///< snapshot.session.id
  std::string label;
  std::optional<std::int64_t> captured_through_seq;
  RetainedSource retained;
  std::optional<std::int64_t> anchor = std::nullopt;  ///< the anchor the reference asked for (`#seq=N`), if any
};

/// prefix + "[" + data_0 + "," + … + "]" + suffix.
std::string build_prompt(const std::vector<RenderedSource>& sources, WorkCounter* counter = nullptr);

/// {"kind":"session-reference","version":1,"references":[{sessionId,label,capturedThroughSeq,
///  compacted,originalMessages,retainedMessages,omittedMessages,omittedBytes,truncated,inputIndex}]},
/// an anchored reference adding anchor (the requested seq) and anchorSeq (the seq centred on, or null).
boost::json::object build_source_record(const std::vector<RenderedSource>& sources);

} // namespace acp::refs
