// `dsh-acp --setup`: the terminal authentication method's program (ACP `type: "terminal"`, docs/models.md:
// Models). The client runs the agent's own command with `--setup` in a terminal; it asks for the
// DeepSeek API key on stderr, reads one line from stdin without echoing it when stdin is a
// terminal (a pipe is read as it is), and stores it with support::write_key_file. Exit status 0
// once the key is stored (what the client takes for a successful login), 1 otherwise. Nothing of
// it is logged: the process log is not even opened.
#pragma once

#include "support/config.hpp"

#include <cstdio>
#include <optional>
#include <string>

namespace acp::server {

/// One line from `fd` (its end, `\r`, or the end of input ends it; at most 4096 bytes are kept),
/// with the terminal's echo off while it is typed when `fd` is a terminal (from before `prompt` is
/// written to `out`: input typed ahead of it is discarded, as getpass does). nullopt when nothing could be read (end of input before any byte, or an error).
std::optional<std::string> read_secret_line(int fd, const char* prompt, std::FILE* out);

/// Runs the set-up with stdin and stderr; returns the exit status.
int run_setup(const support::Config& config);

} // namespace acp::server
