// A tool call that cannot be carried out: its message becomes the call's error result, read by the
// model (never a failed turn, never a JSON-RPC error).
#pragma once

#include <stdexcept>
#include <string>

namespace acp::tools {

class ToolFailure : public std::runtime_error {
public:
  explicit ToolFailure(const std::string& message) : std::runtime_error(message) {}
};

} // namespace acp::tools
