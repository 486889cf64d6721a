// How a request from the agent to the client (fs/*, terminal/*, session/request_permission) can
// fail, for the code that makes such calls (handlers) and the code that carries them (the server).
#pragma once

#include "protocol/jsonrpc.hpp"

#include <stdexcept>
#include <string>

namespace acp::protocol {

/// The client answered with an error.
class ClientCallFailed : public std::runtime_error {
public:
  explicit ClientCallFailed(jsonrpc::RpcError error) : std::runtime_error(error.message()), error_(std::move(error)) {}
  const jsonrpc::RpcError& error() const { return error_; }

private:
  jsonrpc::RpcError error_;
};

/// No answer will come: the connection is closing, too many calls wait, or the caller was cancelled.
class ClientCallAborted : public std::runtime_error {
public:
  explicit ClientCallAborted(const std::string& why, bool cancelled = false)
      : std::runtime_error(why), cancelled_(cancelled) {}
  bool cancelled() const { return cancelled_; }

private:
  bool cancelled_;
};

} // namespace acp::protocol
