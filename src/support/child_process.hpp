// Starting a child program with pipes, in a process group of its own (so the whole tree it starts
// can be signalled at once), its signal mask and dispositions reset, and a pidfd to await its exit
// on an executor (Linux 5.3). Used by the bash tool's fallback and by MCP servers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace acp::support {

struct SpawnSpec {
  std::vector<std::string> argv;  ///< argv[0] is looked up on PATH
  std::string cwd;                ///< "" = ours
  std::vector<std::string> env;   ///< NAME=value entries, the whole environment
  bool stdin_pipe = false;        ///< else /dev/null
  bool stderr_pipe = false;       ///< a pipe of its own; else stderr goes with stdout
};

struct SpawnedProcess {
  pid_t pid = -1;  ///< also its process group's id
  int pidfd = -1;
  int stdin_fd = -1;   ///< our write end, when asked for
  int stdout_fd = -1;  ///< our read end
  int stderr_fd = -1;  ///< our read end, when asked for
};

/// Starts the program. All descriptors are close-on-exec in this process; the caller owns them.
/// Throws std::system_error (the message names the program).
SpawnedProcess spawn_process(const SpawnSpec& spec);

/// Our environment without the variables named in `hidden`, with `extra` (NAME, value) set on top.
std::vector<std::string> child_environment(const std::vector<std::string>& hidden,
                                           const std::vector<std::pair<std::string, std::string>>& extra = {});

} // namespace acp::support
