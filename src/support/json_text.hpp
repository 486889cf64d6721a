// JSON text helpers shared by the wire codec, the session store, the provider and the configuration.
//
// Boost.JSON 1.81 rejects escaped unpaired UTF-16 surrogates ("\ud800"), which JavaScript writers
// (the ACP SDK, deepseek-harness logs) produce legitimately. The error rules of docs/protocol.md decide they are read as
// U+FFFD, never as corruption, so every parse of foreign JSON text goes through parse_json().
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace acp::support {

/// Replaces each escaped unpaired surrogate inside JSON strings with the escape of U+FFFD.
/// Returns true (and fills `out`) only when something was replaced; the text is otherwise untouched.
bool replace_unpaired_surrogate_escapes(std::string_view text, std::string& out);

/// Parses one JSON text (invalid UTF-8 is an error) into `storage` (the default resource when
/// null). `replaced_surrogates`, when given, is set to whether any unpaired surrogate escape had
/// to be replaced.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              bool* replaced_surrogates = nullptr, boost::json::storage_ptr storage = {});

/// Serialises exactly like ECMAScript JSON.stringify for the values we store (no whitespace,
/// lowercase \u00xx control escapes, insertion key order, `/` and U+2028 raw).
std::string to_json_text(const boost::json::value& v);

} // namespace acp::support
