#include "mcp/server.hpp"

#include "protocol/client_call.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/await_ops.hpp"
#include "support/child_process.hpp"
#include "support/event.hpp"
#include "support/json_text.hpp"
#include "support/utf8.hpp"
#include "support/log.hpp"
#include "support/utf8.hpp"
#include "transport/line_framer.hpp"
#include "transport/outbound_calls.hpp"

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
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <system_error>

#include <sys/wait.h>

namespace acp::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;
using support::outcome_of;
using support::sleep_for;
using asio::posix::stream_descriptor;

namespace {

constexpr std::size_t kMaxFrameBytes = 16u << 20;  // one answer of a tool; bigger ones break the server
constexpr std::size_t kStderrTail = 4096;
constexpr std::size_t kMaxWaiting = 256;
constexpr std::size_t kMaxIgnoredLines = 20;  // non-JSON stdout lines logged before staying quiet
constexpr std::chrono::milliseconds kStopStep{400};  // stdin closed, then SIGTERM, then SIGKILL

asio::awaitable<void> wait_for(support::Event& e) { co_await e.wait(); }

// The answer, or ServerFailure `late` when `limit` passes first.
asio::awaitable<json::value> within(asio::awaitable<json::value> op, std::chrono::milliseconds limit, std::string late) {
  auto r = co_await (outcome_of(std::move(op)) || sleep_for(limit));
  if (r.index() == 1) throw ServerFailure(late);
  auto& [error, value] = std::get<0>(r);
  if (error) std::rethrow_exception(error);
  co_return std::move(value);
}

// "300 s" or "1500 ms": a limit as the user configured it.
std::string duration_text(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s" : std::to_string(d.count()) + " ms";
}

std::string string_or(const json::object& o, std::string_view key, std::string fallback = {}) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : fallback;
}

} // namespace

struct Server::State : std::enable_shared_from_this<State> {
  State(asio::any_io_executor ex, ServerSpec s, support::SpawnedProcess p)
      : executor(ex), spec(std::move(s)), pid(p.pid), in(ex, p.stdin_fd), out(ex, p.stdout_fd), err(ex, p.stderr_fd),
        exit_fd(ex, p.pidfd), eof_grace(ex), writes(ex, 2 * kMaxWaiting + 16), pump_done(ex),
        calls(ex, [this](const std::string&, std::string frame) { queue(std::move(frame)); },
              [](std::int64_t id) {
                return jsonrpc::serialize_notification(
                    "notifications/cancelled", json::object{{"requestId", id}, {"reason", "cancelled by the user"}});
              },
              kMaxWaiting),
        framer(kMaxFrameBytes) {}

  asio::any_io_executor executor;
  ServerSpec spec;
  pid_t pid;
  stream_descriptor in, out, err, exit_fd;
  asio::steady_timer eof_grace;  ///< after stdout's EOF, the wait for the exit that explains it
  asio::experimental::channel<void(boost::system::error_code, std::string)> writes;
  support::Event pump_done;
  transport::OutboundCalls calls;
  transport::LineFramer framer;
  std::string stderr_tail;
  std::vector<Tool> tools;
  std::string version;
  bool running = true;
  bool pump_finished = false;
  bool reaped = false;
  int status = 0;
  std::size_t ignored_lines = 0;
  std::uint64_t stdout_bytes = 0;  ///< read so far (bounds what its tools/list answers may cost)
  std::size_t logged_bytes = 0;    ///< what it has put into our log
  bool log_dropped = false;        ///< kMaxLogBytes reached: nothing more of it is logged
  std::string failure;  ///< why it is not running, once it is not

  std::string describe(const std::string& what) const {
    std::string m = "MCP server \"" + spec.name + "\" " + what;
    std::string tail = stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    if (!tail.empty()) m += "; its stderr ends with: " + tail;
    return m;
  }

  void queue(std::string frame) {
    frame += '\n';
    if (!writes.try_send(boost::system::error_code(), std::move(frame))) fail("could not keep up with our requests");
  }

  // The server is unusable: its calls fail, its group is killed (the tasks then see EOF and end).
  void fail(const std::string& why) {
    if (!running) return;
    running = false;
    eof_grace.cancel();
    failure = describe(why);
    log::warn(failure);
    tools.clear();
    calls.close(failure);
    writes.close();
    if (!reaped) ::kill(-pid, SIGKILL);
  }

  void append_stderr(std::string_view bytes) {
    stderr_tail.append(bytes);
    if (stderr_tail.size() > kStderrTail) stderr_tail.erase(0, stderr_tail.size() - kStderrTail);
  }

  // A line the server caused in our log: cut to kMaxLogLineBytes (on a character boundary), and
  // nothing once the server has used up kMaxLogBytes, so a flood costs a bounded amount of disk.
  void log_line(log::Level level, std::string_view what) {
    if (log_dropped || !log::enabled(level)) return;
    std::string line = "MCP server \"" + spec.name + "\": ";
    if (line.size() + what.size() <= kMaxLogLineBytes) {
      line.append(what);
    } else {
      std::string cut = "… (" + std::to_string(what.size()) + " bytes, cut)";
      std::size_t room = kMaxLogLineBytes - std::min(kMaxLogLineBytes, line.size() + cut.size());
      line.append(what.substr(0, support::utf8_floor(what, room)));
      line += cut;
    }
    if (logged_bytes + line.size() > kMaxLogBytes) {
      log_dropped = true;
      log::warn("MCP server \"" + spec.name + "\" has written " + std::to_string(logged_bytes) +
                " bytes to the log; its further messages are dropped");
      return;
    }
    logged_bytes += line.size();
    log::write(level, line);
  }

  void on_frame(std::string text) {
    boost::system::error_code ec;
    json::value frame = support::parse_json(text, ec);
    if (ec && !support::valid_utf8(text)) {
      // A result quoting bytes that are not UTF-8 (a file's, a command's) still answers its call:
      // they are read as U+FFFD, as everything from outside is.
      support::replace_invalid_utf8(text);
      frame = support::parse_json(text, ec);
    }
    if (ec || !frame.is_object()) {
      // Servers that print to stdout break the protocol; their lines are logged, not fatal.
      if (++ignored_lines <= kMaxIgnoredLines)
        log_line(log::Level::warn, "wrote a line that is not JSON-RPC on stdout: " +
                                       text.substr(0, support::utf8_floor(text, 200)));
      return;
    }
    jsonrpc::Inbound inbound = jsonrpc::classify(std::move(frame));
    if (auto* response = std::get_if<jsonrpc::Response>(&inbound)) {
      calls.complete(std::move(*response));
    } else if (auto* request = std::get_if<jsonrpc::Request>(&inbound)) {
      // We offer no client capabilities: ping is the only request a server may send us.
      if (request->method == "ping") queue(jsonrpc::serialize_response(request->id, json::object{}));
      else queue(jsonrpc::serialize_error(request->id, jsonrpc::method_not_found(request->method)));
    } else if (auto* note = std::get_if<jsonrpc::Notification>(&inbound)) {
      if (note->method == "notifications/message") log_line(log::Level::info, support::to_json_text(note->params));
    } else if (auto* rejected = std::get_if<jsonrpc::Rejected>(&inbound)) {
      if (rejected->as_response) calls.complete(std::move(*rejected->as_response));
      log_line(log::Level::warn, "sent an invalid frame: " + rejected->error.message());
    }
  }

  asio::awaitable<void> read_stdout() {
    std::array<char, 16384> buf;
    std::vector<transport::FramerEvent> events;
    for (;;) {
      boost::system::error_code ec;
      std::size_t n = co_await out.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      stdout_bytes += n;
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
    ::kill(-pid, SIGKILL);
    bool status_read = support::reap_process(pid, status);
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

  void kill_now() {
    if (!reaped) ::kill(-pid, SIGKILL);
  }
};

Server::Server(std::shared_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  if (state_ && !state_->pump_finished) {
    state_->running = false;
    state_->calls.close("MCP server \"" + state_->spec.name + "\" was stopped");
    state_->writes.close();
    state_->kill_now();
  }
}

const std::string& Server::name() const { return state_->spec.name; }
const std::string& Server::protocol_version() const { return state_->version; }
const std::vector<Tool>& Server::tools() const { return state_->tools; }
bool Server::running() const { return state_->running; }
std::string Server::stderr_tail() const { return state_->stderr_tail; }
long Server::pid() const { return state_->pid; }

namespace {

// Reads tools/list pages until the server has no more or a bound is reached (kMaxTools kept,
// kMaxToolPages pages, kMaxListingBytes of its output): what was not kept is left out with one
// log line.
asio::awaitable<void> list_tools(Server::State& state) {
  const std::uint64_t bytes_before = state.stdout_bytes;
  std::size_t pages = 0, left_out = 0;
  std::string cursor;
  do {
    json::object params;
    if (!cursor.empty()) params["cursor"] = cursor;
    json::value list = co_await within(state.calls.call("", "tools/list", std::move(params)), state.spec.start_timeout,
                                       state.describe("did not answer tools/list in time"));
    ++pages;
    const json::object* lo = list.if_object();
    const json::array* tools = lo && lo->contains("tools") ? lo->at("tools").if_array() : nullptr;
    if (!tools) throw ServerFailure(state.describe("answered tools/list without a tools array"));
    for (const auto& t : *tools) {
      const json::object* to = t.if_object();
      std::string name = to ? string_or(*to, "name") : "";
      if (name.empty()) continue;
      if (state.tools.size() == kMaxTools) {
        ++left_out;
        continue;
      }
      const json::value* schema = to->if_contains("inputSchema");
      state.tools.push_back(Tool{name, string_or(*to, "description"),
                                 schema && schema->is_object() ? json::serialize(*schema)
                                                               : std::string(R"({"type":"object"})")});
    }
    cursor = string_or(*lo, "nextCursor");
  } while (!cursor.empty() && state.tools.size() < kMaxTools && pages < kMaxToolPages &&
           state.stdout_bytes - bytes_before < kMaxListingBytes);
  if (left_out == 0 && cursor.empty()) co_return;
  std::string unread = cursor.empty() ? "" : "its tools/list answers are not read past page " + std::to_string(pages) + "; ";
  log::warn("MCP server \"" + state.spec.name + "\": " + unread + std::to_string(left_out) + " listed tool(s) left out, " +
            std::to_string(state.tools.size()) + " kept (a server is read for at most " + std::to_string(kMaxTools) +
            " tools, " + std::to_string(kMaxToolPages) + " pages, " + std::to_string(kMaxListingBytes >> 20) + " MiB)");
}

} // namespace

asio::awaitable<std::unique_ptr<Server>> Server::start(asio::any_io_executor executor, ServerSpec spec) {
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
  auto state = std::make_shared<State>(executor, std::move(spec), p);
  asio::co_spawn(executor, state->pump(), [state](std::exception_ptr) {
    state->pump_finished = true;
    state->pump_done.set();
  });
  std::unique_ptr<Server> server(new Server(state));

  std::string failure;
  try {
    json::object init{{"protocolVersion", kProtocolVersions[0]},
                      {"capabilities", json::object{}},
                      {"clientInfo", json::object{{"name", "dsh-acp"}, {"version", "0.1"}}}};
    json::value result = co_await within(state->calls.call("", "initialize", std::move(init)), state->spec.start_timeout,
                                         state->describe("did not answer initialize in time"));
    const json::object* r = result.if_object();
    std::string version = r ? string_or(*r, "protocolVersion") : "";
    bool known = false;
    for (const char* v : kProtocolVersions) known = known || version == v;
    if (!known) throw ServerFailure(state->describe("speaks MCP protocol version \"" + version + "\", which dsh-acp does not"));
    state->version = version;
    state->queue(jsonrpc::serialize_notification("notifications/initialized", json::object{}));
    co_await list_tools(*state);
  } catch (const ServerFailure& e) {
    failure = e.what();
  } catch (const protocol::ClientCallFailed& e) {
    failure = state->describe("refused to start: " + e.error().message());
  } catch (const protocol::ClientCallAborted& e) {
    failure = state->running ? state->describe(e.what()) : state->failure;
  }
  if (!failure.empty()) {
    state->fail("could not be started");
    co_await server->stop();
    throw ServerFailure(failure);
  }
  co_return server;
}

asio::awaitable<CallResult> Server::call_tool(std::string tool, json::object arguments) {
  auto state = state_;
  if (!state->running) throw ServerFailure(state->failure);
  // Built before the co_await: GCC 12 cannot keep an initializer list's array in a coroutine frame.
  json::object params;
  params["name"] = tool;
  params["arguments"] = std::move(arguments);
  try {
    auto answer = co_await (outcome_of(state->calls.call("", "tools/call", std::move(params))) ||
                            sleep_for(state->spec.call_timeout));
    if (answer.index() == 1) {
      // Losing the race cancelled the call, which sent notifications/cancelled; the server stays.
      co_return CallResult{"MCP server \"" + state->spec.name + "\" did not answer " + tool + " within " +
                               duration_text(state->spec.call_timeout) + " (--mcp-call-timeout-ms); the call was cancelled",
                           true};
    }
    auto& [error, result] = std::get<0>(answer);
    if (error) std::rethrow_exception(error);
    const json::object* r = result.if_object();
    if (!r) co_return CallResult{"MCP server \"" + state->spec.name + "\" answered tools/call with " + json::serialize(result), true};
    co_return result_text(*r);
  } catch (const protocol::ClientCallFailed& e) {
    // A protocol error (an unknown tool, bad arguments): the model reads it and can try again.
    co_return CallResult{"MCP error " + std::to_string(e.error().code()) + ": " + e.error().message(), true};
  } catch (const protocol::ClientCallAborted& e) {
    if (e.cancelled()) throw CallCancelled(e.what());
    throw ServerFailure(state->running ? e.what() : state->failure);
  }
}

asio::awaitable<void> Server::stop() {
  auto state = state_;
  if (state->pump_finished) co_return;
  // Cancellation of the caller must not cut the stop short: it is what makes the group go away.
  co_await asio::this_coro::reset_cancellation_state();
  co_await asio::this_coro::throw_if_cancelled(false);
  state->running = false;
  if (state->failure.empty()) state->failure = "MCP server \"" + state->spec.name + "\" was stopped";
  state->calls.close(state->failure);
  state->writes.close();  // its stdin is closed once the writer sees this
  for (int signal : {0, SIGTERM, SIGKILL}) {
    if (signal && !state->reaped) ::kill(-state->pid, signal);
    try {
      auto r = co_await (wait_for(state->pump_done) || sleep_for(kStopStep));
      if (r.index() == 0) co_return;
    } catch (const boost::system::system_error&) {
    }
    if (state->pump_finished) co_return;
  }
  // Killed, yet the pipes stay open (something left the group holding them): stop reading.
  boost::system::error_code ignored;
  state->out.cancel(ignored);
  state->err.cancel(ignored);
  state->exit_fd.cancel(ignored);
  if (!state->pump_finished) co_await state->pump_done.wait();
}

CallResult result_text(const json::object& result) {
  CallResult out;
  if (const auto* e = result.if_contains("isError"); e && e->is_bool()) out.is_error = e->get_bool();
  const json::array* content = result.contains("content") ? result.at("content").if_array() : nullptr;
  std::string text;
  auto add = [&](const std::string& piece) {
    if (!text.empty()) text += '\n';
    text += piece;
  };
  if (content) {
    for (const auto& b : *content) {
      const json::object* block = b.if_object();
      if (!block) continue;
      std::string type = string_or(*block, "type");
      if (type == "text") {
        add(string_or(*block, "text"));
      } else if (type == "image" || type == "audio") {
        std::string data = string_or(*block, "data");
        std::size_t padding = data.ends_with("==") ? 2 : data.ends_with("=") ? 1 : 0;
        std::size_t bytes = data.size() / 4 * 3 - std::min(padding, data.size() / 4 * 3);
        add("[" + type + " " + string_or(*block, "mimeType", "of unknown type") + ", about " + std::to_string(bytes) +
            " bytes, not shown]");
      } else if (type == "resource") {
        const json::object* res = block->contains("resource") ? block->at("resource").if_object() : nullptr;
        if (res && res->contains("text")) add(string_or(*res, "text"));
        else add("[resource " + (res ? string_or(*res, "uri") : std::string()) + "]");
      } else if (type == "resource_link") {
        add("[resource link " + string_or(*block, "uri") +
            (block->contains("name") ? " (" + string_or(*block, "name") + ")" : std::string()) + "]");
      } else {
        add("[" + (type.empty() ? std::string("unknown") : type) + " content, not shown]");
      }
    }
  }
  if (text.empty()) {
    if (const auto* structured = result.if_contains("structuredContent")) text = json::serialize(*structured);
  }
  out.text = std::move(text);
  return out;
}

} // namespace acp::mcp
