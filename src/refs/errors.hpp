// Error vocabulary of the session-reference service.
//
// Every failure the service reports is a SessionReferenceError carrying one of the seven codes of
// docs/session-references.md#configuration-and-errors and the original's English message. The host
// maps the code onto the wire (-32602 with data.code, docs/decisions.md#errors-on-the-wire); the
// library itself knows nothing about ACP.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace acp::refs {

enum class ErrorCode {
  invalid_config,
  invalid_reference,
  self_reference,
  too_many,
  read_failed,
  budget_exceeded,
  cancelled,
};

/// "SESSION_REFERENCE_INVALID_CONFIG" and so on: the code string of the original.
std::string_view error_code_name(ErrorCode code);

/// Thrown by every operation of the service; what() is the message without any prefix.
class SessionReferenceError : public std::runtime_error {
public:
  /// `parameter`: the argument of the service call at fault when it is one alone (listCandidates'
  /// `limit`), which the host names as the request parameter of the same name.
  SessionReferenceError(ErrorCode code, const std::string& message, std::string parameter = {})
      : std::runtime_error(message), code_(code), parameter_(std::move(parameter)) {}
  ErrorCode code() const noexcept { return code_; }
  std::string_view code_name() const { return error_code_name(code_); }
  const std::string& parameter() const noexcept { return parameter_; }

private:
  ErrorCode code_;
  std::string parameter_;
};

} // namespace acp::refs
