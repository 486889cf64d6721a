#include "handlers/mcp_servers.hpp"

#include "engine/engine.hpp"
#include "engine/mcp_tools.hpp"
#include "support/log.hpp"

#include <boost/json/value.hpp>

#include <algorithm>

namespace acp::handlers {

namespace json = boost::json;
using engine::InvalidInput;

namespace {

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// RFC 9110 §5.6.2's tchar: what an HTTP field name is made of.
bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string required_text(const json::object& o, std::string_view key, const std::string& at) {
  const json::value* v = o.if_contains(key);
  std::string pointer = at + "/" + std::string(key);
  if (!v) throw InvalidInput(pointer, "is required");
  if (!v->is_string()) throw InvalidInput(pointer, "must be a string");
  if (v->get_string().empty()) throw InvalidInput(pointer, "must not be empty");
  if (has_nul(v->get_string())) throw InvalidInput(pointer, "must not contain NUL");
  return std::string(v->get_string());
}

const json::array* optional_array(const json::object& o, std::string_view key, const std::string& at) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_array()) throw InvalidInput(at + "/" + std::string(key), "must be an array");
  return &v->get_array();
}

} // namespace

std::vector<mcp::ServerSpec> mcp_server_specs(const json::array& servers, const std::string& cwd,
                                             const support::Config& config) {
  std::vector<mcp::ServerSpec> specs;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const std::string at = "/mcpServers/" + std::to_string(i);
    const json::object* o = servers[i].if_object();
    if (!o) throw InvalidInput(at, "must be an object");
    mcp::ServerSpec spec;
    if (const json::value* type = o->if_contains("type")) {
      if (!type->is_string()) throw InvalidInput(at + "/type", "must be a string");
      std::string_view t = type->get_string();
      if (t == "http") spec.transport = mcp::Transport::http;
      else if (t == "sse") spec.transport = mcp::Transport::sse;
      else if (t != "stdio") throw InvalidInput(at + "/type", "must be \"stdio\", \"http\" or \"sse\"");
    }
    spec.name = required_text(*o, "name", at);
    if (spec.transport != mcp::Transport::stdio) {
      spec.url = required_text(*o, "url", at);
      if (std::string why = mcp::url_problem(spec.url); !why.empty()) throw InvalidInput(at + "/url", why);
      // Sent as given, so nothing in them may end a header line or start another.
      if (const json::array* headers = optional_array(*o, "headers", at)) {
        for (std::size_t j = 0; j < headers->size(); ++j) {
          std::string pointer = at + "/headers/" + std::to_string(j);
          const json::object* header = (*headers)[j].if_object();
          if (!header) throw InvalidInput(pointer, "must be an object with name and value");
          std::string name = required_text(*header, "name", pointer);
          if (!std::all_of(name.begin(), name.end(), is_token_char))
            throw InvalidInput(pointer + "/name", "must be an HTTP field name (letters, digits and !#$%&'*+-.^_`|~)");
          const json::value* value = header->if_contains("value");
          if (!value) throw InvalidInput(pointer + "/value", "is required");
          if (!value->is_string()) throw InvalidInput(pointer + "/value", "must be a string");
          std::string_view v = value->get_string();
          if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
            throw InvalidInput(pointer + "/value", "must not contain CR, LF or NUL");
          spec.headers.emplace_back(std::move(name), std::string(v));
        }
      }
    }
    if (spec.transport == mcp::Transport::stdio) spec.command = required_text(*o, "command", at);
    if (const json::array* args = spec.transport == mcp::Transport::stdio ? optional_array(*o, "args", at) : nullptr) {
      for (std::size_t j = 0; j < args->size(); ++j) {
        const json::value& a = (*args)[j];
        std::string pointer = at + "/args/" + std::to_string(j);
        if (!a.is_string()) throw InvalidInput(pointer, "must be a string");
        if (has_nul(a.get_string())) throw InvalidInput(pointer, "must not contain NUL");
        spec.args.emplace_back(a.get_string());
      }
    }
    if (const json::array* env = spec.transport == mcp::Transport::stdio ? optional_array(*o, "env", at) : nullptr) {
      for (std::size_t j = 0; j < env->size(); ++j) {
        std::string pointer = at + "/env/" + std::to_string(j);
        const json::object* var = (*env)[j].if_object();
        if (!var) throw InvalidInput(pointer, "must be an object with name and value");
        std::string name = required_text(*var, "name", pointer);
        if (name.find('=') != std::string::npos) throw InvalidInput(pointer + "/name", "must not contain '='");
        const json::value* value = var->if_contains("value");
        if (!value) throw InvalidInput(pointer + "/value", "is required");
        if (!value->is_string()) throw InvalidInput(pointer + "/value", "must be a string");
        if (has_nul(value->get_string())) throw InvalidInput(pointer + "/value", "must not contain NUL");
        spec.env.emplace_back(std::move(name), std::string(value->get_string()));
      }
    }
    spec.cwd = cwd;
    spec.hidden_env = engine::provider_key_env();
    spec.call_timeout = std::chrono::milliseconds(config.mcp_call_timeout_ms);
    specs.push_back(std::move(spec));
  }
  return specs;
}

boost::asio::awaitable<void> use_mcp_servers(HandlerContext& ctx, const std::shared_ptr<engine::Session>& session_in,
                                            std::vector<mcp::ServerSpec>& specs_in) {
  std::shared_ptr<engine::Session> session = session_in;
  std::vector<mcp::ServerSpec> specs = std::move(specs_in);
  // The new set is the session's before anything suspends: a close or shutdown meanwhile stops it
  // (abandoning the starts still running) and nothing is left behind.
  std::shared_ptr<engine::McpTools> old = std::move(session->mcp);
  if (!specs.empty()) session->mcp = std::make_shared<engine::McpTools>();
  std::shared_ptr<engine::McpTools> tools = session->mcp;
  if (old) co_await old->stop();
  if (!tools) co_return;
  const std::size_t wanted = specs.size();
  co_await tools->start(ctx.executor, std::move(specs));
  log::info("session " + session->id + ": " + std::to_string(tools->servers()) + " of " + std::to_string(wanted) +
            " MCP server(s) running, " + std::to_string(tools->definitions().size()) + " tool(s)");
}

} // namespace acp::handlers
