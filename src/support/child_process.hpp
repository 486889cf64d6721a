// Starting a child program with pipes, in a process group of its own (so the whole tree it starts
// can be signalled at once), its signal mask and dispositions reset, and a pidfd to await its exit
// on an executor (Linux 5.3). Used by the bash tool's fallback and by MCP servers.
//
// Nothing a child starts outlives it: each child is made the reaper of its own orphans
// (PR_SET_CHILD_SUBREAPER, kept across exec), so while it lives its whole tree stays beneath it,
// `setsid` and double forks included; when it ends, what is left is reparented to us (once
// adopt_orphans() made this process a subreaper too) and kill_orphans() ends it. A child also gets
// SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), which covers a kill -9 of the
// server for the child itself (not for what it left behind: nothing is left to reap that).
#pragma once

#include <boost/asio/awaitable.hpp>

#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace acp::support {

struct SpawnSpec {
  std::vector<std::string> argv;  ///< argv[0] is looked up on our PATH
  std::string cwd;                ///< "" = ours
  std::vector<std::string> env;   ///< NAME=value entries, the whole environment
  bool stdin_pipe = false;        ///< else /dev/null
  bool stderr_pipe = false;       ///< a pipe of its own; else stderr goes with stdout
  int landlock_ruleset = -1;      ///< enforced on the child before exec (with no_new_privs), when >= 0
};

struct SpawnedProcess {
  pid_t pid = -1;  ///< also its process group's id
  int pidfd = -1;
  int stdin_fd = -1;   ///< our write end, when asked for
  int stdout_fd = -1;  ///< our read end
  int stderr_fd = -1;  ///< our read end, when asked for
};

/// Starts the program. All descriptors are close-on-exec in this process; the caller owns them,
/// and reaps the process with reap_process (nothing else may wait for it).
/// Throws std::system_error (the message names the program).
SpawnedProcess spawn_process(const SpawnSpec& spec);

/// Reaps a process spawn_process started, without blocking: false while it still runs.
bool reap_process(pid_t pid, int& status);

/// Kills a process spawn_process started and its group, and reaps it (a short blocking wait: for
/// paths that cannot await).
void kill_and_reap(pid_t pid);

/// Our environment without the secret variables (secrets.hpp) and those named in `hidden`, with
/// `extra` (NAME, value) set on top.
std::vector<std::string> child_environment(const std::vector<std::string>& hidden,
                                           const std::vector<std::pair<std::string, std::string>>& extra = {});

/// Makes this process the reaper of every orphan in the trees of the processes it starts
/// (PR_SET_CHILD_SUBREAPER). Once, at start-up; false when the kernel refused.
bool adopt_orphans();

/// Kills and reaps every child of ours that spawn_process did not start — what the trees of
/// finished children left behind — until none is left (they are SIGKILLed; their own children are
/// reparented to us in turn). Does nothing unless adopt_orphans() succeeded. Not cancellable: it
/// disables cancellation of the calling coroutine (it belongs on the way out of an operation).
boost::asio::awaitable<void> kill_orphans();

/// At exit: kills every child of ours, started or adopted, and waits for each (blocking).
void kill_all_children();

} // namespace acp::support
