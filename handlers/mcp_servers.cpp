#include "handlers/mcp_servers.hpp"

#include "engine/engine.hpp"
#include "engine/mcp_tools.hpp"
#include "support/log.hpp"

#include <boost/json/value.hpp>

namespace acp::handlers {

namespace json = boost::json;
using engine::InvalidInput;

namespace {

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

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
    if (const json::value* type = o->if_contains("type")) {
      if (!type->is_string()) throw InvalidInput(at + "/type", "must be a string");
      std::string_view t = type->get_string();
      if (t == "http" || t == "sse")
        throw InvalidInput(at + "/type", std::string(t) + " MCP servers are not supported (mcpCapabilities." +
                                             std::string(t) + " is false): use a stdio server");
      if (t != "stdio") throw InvalidInput(at + "/type", "must be \"stdio\"");
    }
    mcp::ServerSpec spec;
    spec.name = required_text(*o, "name", at);
    spec.command = required_text(*o, "command", at);
    if (const json::array* args = optional_array(*o, "args", at)) {
      for (std::size_t j = 0; j < args->size(); ++j) {
        const json::value& a = (*args)[j];
        std::string pointer = at + "/args/" + std::to_string(j);
        if (!a.is_string()) throw InvalidInput(pointer, "must be a string");
        if (has_nul(a.get_string())) throw InvalidInput(pointer, "must not contain NUL");
        spec.args.emplace_back(a.get_string());
      }
    }
    if (const json::array* env = optional_array(*o, "env", at)) {
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
