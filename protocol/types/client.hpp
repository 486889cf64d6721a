// Requests the agent sends to the client for its tools (fs/*, terminal/*), declared once like every
// wire type (https://agentclientprotocol.com/protocol/file-system, /protocol/terminals). Answers are
// read leniently: unknown keys ignored, absent optionals empty.
#pragma once

#include "protocol/types/content.hpp"

namespace acp::protocol {

struct ReadTextFileRequest {
  std::string sessionId;
  std::string path;
};
BOOST_DESCRIBE_STRUCT(ReadTextFileRequest, (), (sessionId, path))

struct ReadTextFileResponse {
  std::string content;
};
BOOST_DESCRIBE_STRUCT(ReadTextFileResponse, (), (content))

struct WriteTextFileRequest {
  std::string sessionId;
  std::string path;
  std::string content;
};
BOOST_DESCRIBE_STRUCT(WriteTextFileRequest, (), (sessionId, path, content))

struct CreateTerminalRequest {
  std::string sessionId;
  std::string command;
  std::vector<std::string> args;
  std::string cwd;
  std::int64_t outputByteLimit = 0;
};
BOOST_DESCRIBE_STRUCT(CreateTerminalRequest, (), (sessionId, command, args, cwd, outputByteLimit))

struct CreateTerminalResponse {
  std::string terminalId;
};
BOOST_DESCRIBE_STRUCT(CreateTerminalResponse, (), (terminalId))

/// terminal/wait_for_exit, terminal/output, terminal/kill and terminal/release all name one terminal.
struct TerminalRequest {
  std::string sessionId;
  std::string terminalId;
};
BOOST_DESCRIBE_STRUCT(TerminalRequest, (), (sessionId, terminalId))

/// terminal/wait_for_exit's answer, and `exitStatus` in terminal/output's.
struct TerminalExitStatus {
  std::optional<boost::json::value> exitCode;  ///< an integer, or null; read leniently
  std::optional<std::string> signal;
};
BOOST_DESCRIBE_STRUCT(TerminalExitStatus, (), (exitCode, signal))

struct TerminalOutputResponse {
  std::string output;
  std::optional<bool> truncated;
  std::optional<TerminalExitStatus> exitStatus;
};
BOOST_DESCRIBE_STRUCT(TerminalOutputResponse, (), (output, truncated, exitStatus))

} // namespace acp::protocol
