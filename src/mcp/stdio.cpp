// The stdio transport (MCP "stdio": newline-delimited JSON-RPC 2.0 on the server's stdin and
// stdout): the process in a group of its own, its stdout framed into messages, its stderr's tail
// kept for error messages, its exit watched. Everything on one executor.
#include "mcp/peer.hpp"

#include "support/await_ops.hpp"
#include "support/child_process.hpp"
#include "support/event.hpp"
#include "transport/line_framer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <csignal>
#include <system_error>

#include <sys/wait.h>

namespace acp::mcp {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using asio::posix::stream_descriptor;
using support::sleep_for;

namespace {

constexpr std::size_t kStderrTail = 4096;
constexpr std::chrono::milliseconds kStopStep{400};  // stdin closed, then SIGTERM, then SIGKILL

asio::awaitable<void> wait_for(support::Event& e) { co_await e.wait(); }

struct StdioState final : Server::State {
  StdioState(asio::any_io_executor ex, ServerSpec s, support::SpawnedProcess p)
      : State(ex, std::move(s)), pid_(p.pid), in(ex, p.stdin_fd), out(ex, p.stdout_fd), err(ex, p.stderr_fd),
        exit_fd(ex, p.pidfd), eof_grace(ex), writes(ex, 2 * kMaxWaiting + 16), pump_done(ex), framer(kMaxFrameBytes) {}

  pid_t pid_;
  stream_descriptor in, out, err, exit_fd;
  asio::steady_timer eof_grace;  ///< after stdout's EOF, the wait for the exit that explains it
  asio::experimental::channel<void(boost::system::error_code, std::string)> writes;
  support::Event pump_done;
  transport::LineFramer framer;
  bool pump_finished = false;
  bool reaped = false;
  int status = 0;

  long pid() const override { return pid_; }

  void send(std::string frame) override {
    frame += '\n';
    if (!writes.try_send(boost::system::error_code(), std::move(frame))) fail("could not keep up with our requests");
  }

  // Its group is killed: the tasks then see EOF and end.
  void on_failed() override {
    eof_grace.cancel();
    writes.close();
    if (!reaped) ::kill(-pid_, SIGKILL);
  }

  void abandon() override {
    if (pump_finished) return;
    running = false;
    calls.close("MCP server \"" + spec.name + "\" was stopped");
    writes.close();
    if (!reaped) ::kill(-pid_, SIGKILL);
  }

  void append_stderr(std::string_view bytes) {
    stderr_tail.append(bytes);
    if (stderr_tail.size() > kStderrTail) stderr_tail.erase(0, stderr_tail.size() - kStderrTail);
  }

  asio::awaitable<void> read_stdout() {
    std::array<char, 16384> buf;
    std::vector<transport::FramerEvent> events;
    for (;;) {
      boost::system::error_code ec;
      std::size_t n = co_await out.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      bytes_read += n;
      framer.feed(std::string_view(buf.data(), n), events);
      for (auto& e : events) {
        if (auto* f = std::get_if<transport::Frame>(&e)) on_frame(std::move(f->text));
        else fail("sent a message larger than " + std::to_string(kMaxFrameBytes >> 20) + " MiB");
      }
      events.clear();
      if (ec) break;
    }
    // Its exit, which usually follows, says more (a status, a signal); a server that closes
    // stdout and stays is failed after a moment.
    if (running) {
      eof_grace.expires_after(kStopStep);
      boost::system::error_code ignored;
      co_await eof_grace.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    fail("closed its stdout");
  }

  asio::awaitable<void> read_stderr() {
    std::array<char, 4096> buf;
    for (;;) {
      boost::system::error_code ec;
      std::size_t n = co_await err.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      append_stderr(std::string_view(buf.data(), n));
      if (ec) co_return;
    }
  }

  asio::awaitable<void> write_stdin() {
    for (;;) {
      auto [ec, frame] = co_await writes.async_receive(asio::as_tuple(asio::use_awaitable));
      if (ec) break;  // closed: stop() or a failure
      boost::system::error_code wec;
      co_await asio::async_write(in, asio::buffer(frame), asio::redirect_error(asio::use_awaitable, wec));
      if (wec) {
        fail("stopped reading its stdin (" + wec.message() + ")");
        break;
      }
    }
    boost::system::error_code ignored;
    in.close(ignored);  // EOF on its stdin: a well-behaved server exits
  }

  asio::awaitable<void> watch_exit() {
    boost::system::error_code ec;
    co_await exit_fd.async_wait(stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    // Whatever it started goes with it (and lets go of the pipes): its group, killed while the
    // unreaped leader still holds the group's id (once reaped, the id could name another group),
    // and what left the group (reparented to us when it ended).
    ::kill(-pid_, SIGKILL);
    bool status_read = support::reap_process(pid_, status);
    reaped = true;  // either way, its pid is no longer ours to signal
    std::string how = !status_read ? "ended (its status could not be read)"
                      : WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                      : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                            : "ended";
    fail(how);
    co_await support::kill_orphans();
  }

  asio::awaitable<void> pump() {
    co_await (read_stdout() && read_stderr() && write_stdin() && watch_exit());
  }

  asio::awaitable<void> stop() override {
    auto self = shared_from_this();
    if (pump_finished) co_return;
    // Cancellation of the caller must not cut the stop short: it is what makes the group go away.
    co_await asio::this_coro::reset_cancellation_state();
    co_await asio::this_coro::throw_if_cancelled(false);
    running = false;
    if (failure.empty()) failure = "MCP server \"" + spec.name + "\" was stopped";
    calls.close(failure);
    writes.close();  // its stdin is closed once the writer sees this
    for (int signal : {0, SIGTERM, SIGKILL}) {
      if (signal && !reaped) ::kill(-pid_, signal);
      try {
        auto r = co_await (wait_for(pump_done) || sleep_for(kStopStep));
        if (r.index() == 0) co_return;
      } catch (const boost::system::system_error&) {
      }
      if (pump_finished) co_return;
    }
    // Killed, yet the pipes stay open (something left the group holding them): stop reading.
    boost::system::error_code ignored;
    out.cancel(ignored);
    err.cancel(ignored);
    exit_fd.cancel(ignored);
    if (!pump_finished) co_await pump_done.wait();
  }
};

} // namespace

std::shared_ptr<Server::State> start_stdio(asio::any_io_executor executor, ServerSpec spec) {
  support::SpawnSpec s;
  s.argv.push_back(spec.command);
  s.argv.insert(s.argv.end(), spec.args.begin(), spec.args.end());
  s.cwd = spec.cwd;
  s.env = support::child_environment(spec.hidden_env, spec.env);
  s.stdin_pipe = true;
  s.stderr_pipe = true;
  support::SpawnedProcess p;
  try {
    p = support::spawn_process(s);
  } catch (const std::system_error& e) {
    throw ServerFailure("MCP server \"" + spec.name + "\" could not be started: " + e.what());
  }
  auto state = std::make_shared<StdioState>(executor, std::move(spec), p);
  asio::co_spawn(executor, state->pump(), [state](std::exception_ptr) {
    state->pump_finished = true;
    state->pump_done.set();
  });
  return state;
}

} // namespace acp::mcp
