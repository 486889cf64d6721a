#include "mcp/server.hpp"

#include "mcp/peer.hpp"
#include "protocol/client_call.hpp"
#include "protocol/jsonrpc.hpp"
#include "support/await_ops.hpp"
#include "support/json_text.hpp"
#include "support/log.hpp"
#include "support/utf8.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace acp::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;
using support::outcome_of;
using support::sleep_for;

namespace {

constexpr std::size_t kMaxIgnoredLines = 20;  // messages that are not JSON-RPC logged before staying quiet

// The answer, or ServerFailure `late` when `limit` passes first.
asio::awaitable<json::value> within(asio::awaitable<json::value> op, std::chrono::milliseconds limit, std::string late) {
  auto r = co_await (outcome_of(std::move(op)) || sleep_for(limit));
  if (r.index() == 1) throw ServerFailure(late);
  auto& [error, value] = std::get<0>(r);
  if (error) std::rethrow_exception(error);
  co_return std::move(value);
}

asio::awaitable<bool> finished(asio::awaitable<void> op) {
  co_await std::move(op);
  co_return true;
}

// `op` done, or ServerFailure `late` when `limit` passes first.
asio::awaitable<void> within_void(asio::awaitable<void> op, std::chrono::milliseconds limit, std::string late) {
  auto r = co_await (outcome_of(finished(std::move(op))) || sleep_for(limit));
  if (r.index() == 1) throw ServerFailure(late);
  if (auto& error = std::get<0>(r).first) std::rethrow_exception(error);
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

Server::State::State(asio::any_io_executor ex, ServerSpec s)
    : executor(ex), spec(std::move(s)),
      calls(ex, [this](const std::string&, std::string frame) { send(std::move(frame)); },
            [this](std::int64_t id) {
              withdrawn(id);
              return jsonrpc::serialize_notification(
                  "notifications/cancelled", json::object{{"requestId", id}, {"reason", "cancelled by the user"}});
            },
            kMaxWaiting) {}

std::string Server::State::describe(const std::string& what) const {
  std::string m = "MCP server \"" + spec.name + "\" " + what;
  std::string tail = stderr_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (!tail.empty()) m += "; its stderr ends with: " + tail;
  return m;
}

void Server::State::fail(const std::string& why) {
  if (!running) return;
  running = false;
  failure = describe(why);
  log::warn(failure);
  tools.clear();
  calls.close(failure);
  on_failed();
}

// Cut to kMaxLogLineBytes (on a character boundary), and nothing once the server has used up
// kMaxLogBytes, so a flood costs a bounded amount of disk.
void Server::State::log_line(log::Level level, std::string_view what) {
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

std::optional<std::int64_t> Server::State::on_frame(std::string text) {
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
    if (++ignored_frames <= kMaxIgnoredLines)
      log_line(log::Level::warn, "sent a message that is not JSON-RPC: " + text.substr(0, support::utf8_floor(text, 200)));
    return std::nullopt;
  }
  std::optional<std::int64_t> answered;
  jsonrpc::Inbound inbound = jsonrpc::classify(std::move(frame));
  if (auto* response = std::get_if<jsonrpc::Response>(&inbound)) {
    answered = response->number;
    calls.complete(std::move(*response));
  } else if (auto* request = std::get_if<jsonrpc::Request>(&inbound)) {
    // We offer no client capabilities: ping is the only request a server may send us.
    if (request->method == "ping") send(jsonrpc::serialize_response(request->id, json::object{}));
    else send(jsonrpc::serialize_error(request->id, jsonrpc::method_not_found(request->method)));
  } else if (auto* note = std::get_if<jsonrpc::Notification>(&inbound)) {
    if (note->method == "notifications/message") log_line(log::Level::info, support::to_json_text(note->params));
  } else if (auto* rejected = std::get_if<jsonrpc::Rejected>(&inbound)) {
    if (rejected->as_response) {
      answered = rejected->as_response->number;
      calls.complete(std::move(*rejected->as_response));
    }
    log_line(log::Level::warn, "sent an invalid frame: " + rejected->error.message());
  }
  return answered;
}

asio::awaitable<void> Server::State::open() { co_return; }

Server::Server(std::shared_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  if (state_) state_->abandon();
}

const std::string& Server::name() const { return state_->spec.name; }
const std::string& Server::protocol_version() const { return state_->version; }
const std::vector<Tool>& Server::tools() const { return state_->tools; }
bool Server::running() const { return state_->running; }
std::string Server::stderr_tail() const { return state_->stderr_tail; }
long Server::pid() const { return state_->pid(); }

namespace {

// Reads tools/list pages until the server has no more or a bound is reached (kMaxTools kept,
// kMaxToolPages pages, kMaxListingBytes of its output): what was not kept is left out with one
// log line.
asio::awaitable<void> list_tools(Server::State& state) {
  const std::uint64_t bytes_before = state.bytes_read;
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
           state.bytes_read - bytes_before < kMaxListingBytes);
  if (left_out == 0 && cursor.empty()) co_return;
  std::string unread = cursor.empty() ? "" : "its tools/list answers are not read past page " + std::to_string(pages) + "; ";
  log::warn("MCP server \"" + state.spec.name + "\": " + unread + std::to_string(left_out) + " listed tool(s) left out, " +
            std::to_string(state.tools.size()) + " kept (a server is read for at most " + std::to_string(kMaxTools) +
            " tools, " + std::to_string(kMaxToolPages) + " pages, " + std::to_string(kMaxListingBytes >> 20) + " MiB)");
}

} // namespace

asio::awaitable<std::unique_ptr<Server>> Server::start(asio::any_io_executor executor, ServerSpec spec) {
  std::shared_ptr<State> state = spec.transport == Transport::stdio ? start_stdio(executor, std::move(spec))
                                                                    : make_http(executor, std::move(spec));
  std::unique_ptr<Server> server(new Server(state));

  std::string failure;
  try {
    co_await within_void(state->open(), state->spec.start_timeout, state->describe("did not open its event stream in time"));
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
    state->send(jsonrpc::serialize_notification("notifications/initialized", json::object{}));
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
  co_await state->stop();
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
