#include "tools/command.hpp"

#include "support/await_ops.hpp"
#include "support/child_process.hpp"
#include "support/sandbox.hpp"
#include "support/unique_fd.hpp"
#include "tools/output_cap.hpp"
#include "tools/tool_failure.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <system_error>

#include <sys/wait.h>
#include <unistd.h>

namespace acp::tools {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using support::sleep_for;

namespace {

// After the shell exits, output still in the pipe is read for at most this long (a process that
// left the group could hold the pipe open forever).
constexpr std::chrono::milliseconds kDrain{500};

// The process group: killed and its leader reaped on every path out of run_command.
struct Group {
  pid_t pid = 0;
  bool reaped = false;
  int status = 0;
  void kill() const {
    if (!reaped) ::kill(-pid, SIGKILL);
  }
  // Non-blocking: true once the leader was reaped (its pidfd said it exited).
  bool reap() {
    if (!reaped) reaped = support::reap_process(pid, status);
    return reaped;
  }
  ~Group() {
    // Only on an abnormal path (an exception): the group is SIGKILLed, so this wait is short.
    if (!reaped && pid > 0) support::kill_and_reap(pid);
  }
};


asio::awaitable<void> read_output(asio::posix::stream_descriptor& out, OutputCap& cap) {
  std::array<char, 16384> buf;
  for (;;) {
    boost::system::error_code ec;
    std::size_t n = co_await out.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0) cap.append(std::string_view(buf.data(), n));
    if (ec) co_return;  // EOF (every writer closed) or an error: nothing more to read
  }
}

asio::awaitable<void> wait_readable(asio::posix::stream_descriptor& fd) {
  co_await fd.async_wait(asio::posix::stream_descriptor::wait_read, asio::use_awaitable);
}


} // namespace

asio::awaitable<CommandOutcome> run_command(CommandRequest request) {
  auto ex = co_await asio::this_coro::executor;
  support::SpawnSpec spec;
  spec.argv = {"bash", "-c", request.command};
  spec.cwd = request.workdir;
  spec.env = support::child_environment(request.hidden_env);
  support::SpawnedProcess child;
  try {
    support::UniqueFd ruleset;  // the Landlock ruleset, for as long as the spawn needs it
    if (!request.writable_roots.empty()) {
      std::vector<std::string> writable = request.writable_roots;
      for (auto& dir : support::temporary_directories()) writable.push_back(std::move(dir));
      ruleset = support::UniqueFd(support::write_confinement(writable));
      spec.landlock_ruleset = ruleset.get();
    }
    child = support::spawn_process(spec);
  } catch (const std::system_error& e) {
    throw ToolFailure(std::string("cannot start the command: ") + e.what());
  }
  const pid_t pid = child.pid;
  Group group{pid};
  asio::posix::stream_descriptor exit_fd(ex, child.pidfd);
  asio::posix::stream_descriptor out(ex, child.stdout_fd);

  CommandOutcome outcome;
  outcome.pid = pid;
  OutputCap cap(request.max_output_bytes);
  bool exited = false;
  try {
    // Until the shell exits, the time is up, or the output ends; reading all the while.
    const auto deadline = std::chrono::steady_clock::now() + request.timeout;
    auto first = co_await (wait_readable(exit_fd) || sleep_for(request.timeout) || read_output(out, cap));
    std::size_t which = first.index();
    if (which == 2) {
      // Its output closed while it runs: wait for the exit or the time limit.
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      auto second = co_await (wait_readable(exit_fd) || sleep_for(std::max(left, std::chrono::milliseconds(0))));
      which = second.index();
    }
    exited = which == 0;
    outcome.timed_out = which == 1;
  } catch (const boost::system::system_error&) {
    // The turn was cancelled: the awaited operations were aborted.
    outcome.cancelled = true;
  }
  group.kill();
  if (!exited) {
    // Killed: its exit follows at once. Waited for on the executor, not cancellable any more.
    co_await asio::this_coro::reset_cancellation_state();
    co_await asio::this_coro::throw_if_cancelled(false);
    boost::system::error_code ec;
    co_await exit_fd.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
  }
  group.reap();
  // What left the group or outlived the shell; also lets go of the output pipe.
  co_await support::kill_orphans();
  if (!outcome.cancelled && out.is_open()) {
    // What is still in the pipe, briefly.
    co_await asio::this_coro::throw_if_cancelled(false);
    try {
      co_await (read_output(out, cap) || sleep_for(kDrain));
    } catch (const boost::system::system_error&) {
    }
  }
  if (group.reaped) {
    if (WIFEXITED(group.status)) outcome.exit_code = WEXITSTATUS(group.status);
    else if (WIFSIGNALED(group.status)) outcome.signal = WTERMSIG(group.status);
  }
  outcome.output = cap.text();
  outcome.output_bytes = cap.total_bytes();
  co_return outcome;
}

std::string timeout_note(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  const std::string after = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
  return "[timed out after " + after + ": the command was killed]";
}

std::string describe_outcome(const CommandOutcome& outcome, std::chrono::milliseconds timeout) {
  std::string text = outcome.output;
  auto note = [&](const std::string& n) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += n;
  };
  if (outcome.cancelled) note("[cancelled: the command was killed]");
  else if (outcome.timed_out)
    note(timeout_note(timeout));
  else if (outcome.exit_code && *outcome.exit_code != 0) note("[exit code: " + std::to_string(*outcome.exit_code) + "]");
  else if (outcome.signal) note("[killed by signal " + std::to_string(*outcome.signal) + "]");
  if (text.empty()) text = "(no output)";
  return text;
}

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? "SIG" + std::string(abbrev) : std::to_string(signal);
}

} // namespace acp::tools
