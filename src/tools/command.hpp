// The `bash` tool's server-side fallback, for clients without the `terminal` capability: `bash -c`
// in a process group of its own, stdin from /dev/null, stdout and stderr together into an OutputCap.
// The whole group is killed on timeout, on cancellation of the awaiting operation (the turn's
// cancellation slot) and once the shell has exited, and so is whatever left the group (`setsid`,
// double forks: child_process.hpp), so nothing it started outlives the call. Confined by Landlock
// when the kernel has it: writes only beneath `writable_roots` and the temporary directories.
// Needs pidfd_open (Linux 5.3): the exit is awaited on the executor, never with a blocking wait.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace acp::tools {

inline constexpr std::chrono::milliseconds kDefaultCommandTimeout{120000};
inline constexpr std::chrono::milliseconds kMaxCommandTimeout{600000};

struct CommandRequest {
  std::string command;
  std::string workdir = {};  ///< an existing directory, already confined
  std::chrono::milliseconds timeout = kDefaultCommandTimeout;
  std::size_t max_output_bytes = 64u << 10;
  /// Environment variables the command must not see (the provider's API key).
  std::vector<std::string> hidden_env = {};
  /// Where it may write besides the temporary directories (the session's roots); empty: anywhere.
  std::vector<std::string> writable_roots = {};
};

struct CommandOutcome {
  std::optional<int> exit_code;  ///< it exited
  std::optional<int> signal;     ///< it was killed by a signal (ours on timeout/cancel, or another)
  bool timed_out = false;
  bool cancelled = false;
  std::string output;            ///< capped
  std::size_t output_bytes = 0;  ///< all it printed
  long pid = 0;                  ///< the shell's pid, which is also the group's id
};

/// Runs the command. Throws ToolFailure when it cannot be started.
boost::asio::awaitable<CommandOutcome> run_command(CommandRequest request);

/// What the model reads: the output, then `[exit code: N]`, `[timed out after N s: killed]` or
/// `[killed by signal N]` when it did not exit with 0.
/// `[timed out after N s: the command was killed]` (ms when not whole seconds).
std::string timeout_note(std::chrono::milliseconds timeout);
std::string describe_outcome(const CommandOutcome& outcome, std::chrono::milliseconds timeout);

/// A signal's name as ACP's terminal exit status gives it ("SIGKILL"); the number for one without.
std::string signal_name(int signal);

} // namespace acp::tools
