#include "engine/mcp_tools.hpp"

#include "support/secrets.hpp"

#include "mcp/server.hpp"
#include "support/event.hpp"
#include "support/json_text.hpp"
#include "support/log.hpp"
#include "tools/catalog.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/object.hpp>

#include <algorithm>

namespace acp::engine {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::size_t kMaxNameBytes = 64;  // OpenAI's limit for a function name

std::string sanitised(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

// Runs `tasks` concurrently on `ex` and returns when all have finished (none throws).
// (By reference: GCC 12 destroys by-value class-type parameters of a co_awaited coroutine twice.)
asio::awaitable<void> join_all(const asio::any_io_executor& ex, std::vector<asio::awaitable<void>>& tasks) {
  struct Join {
    explicit Join(asio::any_io_executor e) : done(std::move(e)) {}
    std::size_t left = 0;
    support::Event done;
  };
  asio::any_io_executor executor = ex;
  std::vector<asio::awaitable<void>> mine = std::move(tasks);
  auto join = std::make_shared<Join>(executor);
  join->left = mine.size();
  if (mine.empty()) co_return;
  for (auto& t : mine)
    asio::co_spawn(executor, std::move(t), [join](std::exception_ptr) {
      if (--join->left == 0) join->done.set();
    });
  // Not cut short by the caller's cancellation: what was started is awaited.
  co_await asio::this_coro::reset_cancellation_state(asio::cancellation_filter<asio::cancellation_type::none>());
  while (join->left > 0) co_await join->done.wait();
}

std::string offered_description(const mcp::Tool& tool, const std::string& server) {
  return tool.description.empty() ? "Tool \"" + tool.name + "\" of the MCP server \"" + server + "\"" : tool.description;
}

} // namespace

std::size_t max_session_mcp_tools() {
  // ask_user and recall are offered beside them in some turns: a request never carries more than the limit.
  static const std::size_t n =
      kMaxRequestTools - std::min(kMaxRequestTools, tools::builtin_tools().size() + kConditionalServerTools);
  return n;
}

std::string mcp_tool_name(std::string_view server, std::string_view tool) {
  std::string name = "mcp__" + sanitised(server) + "__" + sanitised(tool);
  if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);
  return name;
}

std::vector<std::string> provider_key_env() { return support::secret_variables(); }

struct McpTools::Entry {
  explicit Entry(std::string n) : name(std::move(n)) {}
  std::string name;
  std::unique_ptr<mcp::Server> server;   ///< null: not started (yet), or failed to start
  asio::cancellation_signal start_cancel;  ///< stop() during start-up abandons it
  std::vector<std::string> names;          ///< its tools' mcp__ names
};

McpTools::McpTools() = default;

McpTools::~McpTools() = default;  // a server not stopped is killed by its destructor

asio::awaitable<void> McpTools::start(asio::any_io_executor executor_in, std::vector<mcp::ServerSpec> servers_in) {
  // Parameters moved into locals at once: GCC 12 may destroy a co_awaited coroutine's by-value
  // parameters twice, which is harmless only for moved-from ones.
  asio::any_io_executor executor = std::move(executor_in);
  std::vector<mcp::ServerSpec> servers = std::move(servers_in);
  if (!started_) started_ = std::make_unique<support::Event>(executor);
  auto self = shared_from_this();
  if (stopping_) co_return;  // the session went away first
  std::size_t first = entries_.size();
  for (const auto& spec : servers) entries_.push_back(std::make_unique<Entry>(spec.name));
  starting_ += servers.size();
  for (std::size_t i = 0; i < servers.size(); ++i) {
    Entry& entry = *entries_[first + i];
    asio::co_spawn(executor, mcp::Server::start(executor, std::move(servers[i])),
                   asio::bind_cancellation_slot(entry.start_cancel.slot(),
                                                [self, index = first + i](std::exception_ptr error,
                                                                          std::unique_ptr<mcp::Server> server) {
                                                  Entry& e = *self->entries_[index];
                                                  if (error) {
                                                    try {
                                                      std::rethrow_exception(error);
                                                    } catch (const std::exception& x) {
                                                      // The server has already logged why (with its stderr tail).
                                                      log::warn("MCP server \"" + e.name + "\" left out: " + x.what());
                                                    }
                                                  } else {
                                                    e.server = std::move(server);
                                                  }
                                                  --self->starting_;
                                                  self->started_->notify_all();
                                                }));
  }
  co_await asio::this_coro::reset_cancellation_state(asio::cancellation_filter<asio::cancellation_type::none>());
  while (starting_ > 0) co_await started_->wait();
  // Named once all are up, in server order: which of two clashing names gets the suffix does not
  // depend on which server answered first.
  for (std::size_t i = first; i < entries_.size(); ++i)
    if (entries_[i]->server) add_tools(i);
}

void McpTools::add_tools(std::size_t index) {
  Entry& entry = *entries_[index];
  std::size_t left_out = 0, left_out_by_count = 0;
  for (const auto& tool : entry.server->tools()) {
    std::string name = mcp_tool_name(entry.name, tool.name);
    std::string plain = name;
    // Two names that read the same once made valid: the later one gets a number.
    for (int n = 2; offered_.contains(name); ++n) {
      std::string suffix = "_" + std::to_string(n);
      name = plain.substr(0, std::min(plain.size(), kMaxNameBytes - suffix.size())) + suffix;
    }
    if (offered_.size() >= max_session_mcp_tools()) {
      ++left_out_by_count;
      continue;
    }
    std::size_t bytes = name.size() + offered_description(tool, entry.name).size() + tool.input_schema.size();
    if (bytes > kMaxToolBytes - offered_bytes_) {
      ++left_out;  // a smaller one later may still fit
      continue;
    }
    offered_bytes_ += bytes;
    if (name != plain) {
      log::info("MCP server \"" + entry.name + "\": tool \"" + tool.name + "\" offered as " + name +
                " (its plain name is taken)");
    }
    offered_.emplace(name, Offered{index, tool.name});
    entry.names.push_back(name);
  }
  order_.insert(order_.end(), entry.names.begin(), entry.names.end());
  if (left_out > 0)
    log::warn("MCP server \"" + entry.name + "\": " + std::to_string(left_out) + " of its " +
              std::to_string(entry.server->tools().size()) + " tool(s) left out: the session's MCP tool names, " +
              "descriptions and schemas are limited to " + std::to_string(kMaxToolBytes >> 10) + " KiB");
  if (left_out_by_count > 0)
    log::warn("MCP server \"" + entry.name + "\": " + std::to_string(left_out_by_count) + " of its " +
              std::to_string(entry.server->tools().size()) + " tool(s) left out: a session offers at most " +
              std::to_string(max_session_mcp_tools()) + " MCP tools (with the built-in ones, the " +
              std::to_string(kMaxRequestTools) + " functions a model request may carry)");
}

std::vector<llm::ToolDefinition> McpTools::definitions() const {
  std::vector<llm::ToolDefinition> out;
  for (const auto& name : order_) {
    const Offered& o = offered_.find(name)->second;
    const Entry& e = *entries_[o.entry];
    if (!e.server || !e.server->running()) continue;
    for (const auto& tool : e.server->tools()) {
      if (tool.name != o.tool) continue;
      out.push_back(llm::ToolDefinition{name, offered_description(tool, e.name), tool.input_schema});
      break;
    }
  }
  return out;
}

bool McpTools::offers(std::string_view name) const {
  auto it = offered_.find(name);
  if (it == offered_.end()) return false;
  const Entry& e = *entries_[it->second.entry];
  return e.server && e.server->running();
}

std::string McpTools::withdrawn_tools(std::size_t index) const {
  std::string list;
  for (const auto& n : entries_[index]->names) list += (list.empty() ? "" : ", ") + n;
  return list.empty() ? "none" : list;
}

asio::awaitable<ToolOutcome> McpTools::call(std::string name_in, std::string arguments_in) {
  std::string name = std::move(name_in);  // (see start())
  std::string arguments = std::move(arguments_in);
  auto self = shared_from_this();  // a load that replaces the set must not free it under this call
  ToolOutcome out;
  out.is_error = true;
  auto it = offered_.find(name);
  if (it == offered_.end()) {
    out.text = "Error: there is no tool named \"" + name + "\"";
    co_return out;
  }
  const std::size_t index = it->second.entry;
  const std::string tool = it->second.tool;
  json::object args;
  if (!arguments.empty()) {
    boost::system::error_code ec;
    json::value v = support::parse_json(arguments, ec);
    if (ec) {
      out.text = "Error: the arguments are not valid JSON (" + ec.message() + ")";
      co_return out;
    }
    if (!v.is_object()) {
      out.text = "Error: the arguments must be a JSON object";
      co_return out;
    }
    args = std::move(v.as_object());
  }
  Entry& entry = *entries_[index];
  if (!entry.server) {
    out.text = "Error: the MCP server \"" + entry.name + "\" is not running";
    co_return out;
  }
  if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
    out.cancelled = true;
    out.text = "Error: cancelled";
    co_return out;
  }
  try {
    mcp::CallResult r = co_await entry.server->call_tool(tool, std::move(args));
    out.is_error = r.is_error;
    out.text = r.text.empty() ? "(no output)" : std::move(r.text);
  } catch (const mcp::CallCancelled&) {
    out.cancelled = true;
    out.text = "Error: cancelled";
  } catch (const mcp::ServerFailure& e) {
    out.text = std::string("Error: ") + e.what() + ". Its tools are withdrawn: " + withdrawn_tools(index);
  }
  co_return out;
}

void McpTools::abandon_start() {
  if (starting_ == 0) return;
  for (auto& e : entries_)
    if (!e->server) e->start_cancel.emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> McpTools::stop() {
  auto self = shared_from_this();
  auto ex = co_await asio::this_coro::executor;
  stopping_ = true;
  // Starts still running are abandoned (each stops what it started), then the running servers end.
  abandon_start();
  co_await asio::this_coro::reset_cancellation_state(asio::cancellation_filter<asio::cancellation_type::none>());
  while (starting_ > 0) co_await started_->wait();
  std::vector<asio::awaitable<void>> stops;
  for (auto& e : entries_)
    if (e->server) stops.push_back(e->server->stop());
  co_await join_all(ex, stops);
}

std::size_t McpTools::servers() const {
  return std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e->server && e->server->running(); });
}

std::vector<long> McpTools::pids() const {
  std::vector<long> out;
  for (const auto& e : entries_)
    if (e->server && e->server->running() && e->server->pid() > 0) out.push_back(e->server->pid());
  return out;
}

} // namespace acp::engine
