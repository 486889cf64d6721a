// Packed chunk rows (harness-compat §1.6): one storage line standing for a run of assistant/chunk
// delta events. The store reads them always and never writes them (packChunks defaults to false),
// so only the decoder lives here.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <vector>

namespace acp::store {

enum class LineDecode {
  event,      ///< the line is one event (appended to `out` unvalidated)
  row,        ///< a valid packed row, expanded into its member events
  malformed,  ///< not an object, or a packed row that fails validation: an unparsable line
};

/// Decodes one parsed storage line into events appended to `out` (moved from `line`).
LineDecode decode_storage_line(boost::json::value&& line, std::vector<boost::json::object>& out);

} // namespace acp::store
