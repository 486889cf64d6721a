#include "refs/errors.hpp"

namespace acp::refs {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
  case ErrorCode::invalid_config: return "SESSION_REFERENCE_INVALID_CONFIG";
  case ErrorCode::invalid_reference: return "SESSION_REFERENCE_INVALID_REFERENCE";
  case ErrorCode::self_reference: return "SESSION_REFERENCE_SELF_REFERENCE";
  case ErrorCode::too_many: return "SESSION_REFERENCE_TOO_MANY";
  case ErrorCode::read_failed: return "SESSION_REFERENCE_READ_FAILED";
  case ErrorCode::budget_exceeded: return "SESSION_REFERENCE_BUDGET_EXCEEDED";
  case ErrorCode::cancelled: return "SESSION_REFERENCE_CANCELLED";
  }
  return "SESSION_REFERENCE_UNKNOWN";
}

} // namespace acp::refs
