#include "handlers/acp_editor.hpp"

#include "handlers/client_capabilities.hpp"
#include "protocol/client_call.hpp"
#include "protocol/types/client.hpp"
#include "protocol/wire.hpp"
#include "support/json_number.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;

namespace {

// Params built outside the coroutines: GCC 12 mishandles braced temporaries (and an initializer
// list's array) inside a co_await's full-expression, so each request is a local before it is sent.
json::value read_params(const std::string& session, std::string path) {
  return wire::encode(protocol::ReadTextFileRequest{session, std::move(path)});
}

json::value write_params(const std::string& session, std::string path, std::string content) {
  return wire::encode(protocol::WriteTextFileRequest{session, std::move(path), std::move(content)});
}

json::value terminal_params(const std::string& session, std::string command, std::string cwd, std::size_t output_limit) {
  return wire::encode(protocol::CreateTerminalRequest{session, "bash", {"-c", std::move(command)}, std::move(cwd),
                                                      static_cast<std::int64_t>(output_limit)});
}

json::value terminal_ref(const std::string& session, std::string terminal) {
  return wire::encode(protocol::TerminalRequest{session, std::move(terminal)});
}

engine::TerminalExit exit_of(const protocol::TerminalExitStatus& status) {
  engine::TerminalExit exit;
  if (status.exitCode) exit.exit_code = support::json_integer(*status.exitCode);
  exit.signal = status.signal;
  return exit;
}

class AcpEditor final : public engine::Editor {
public:
  AcpEditor(HandlerContext& ctx, std::string session) : ctx_(ctx), session_(std::move(session)) {
    reads_ = client_flag(ctx.client_capabilities, "fs", "readTextFile");
    writes_ = client_flag(ctx.client_capabilities, "fs", "writeTextFile");
    terminal_ = client_flag(ctx.client_capabilities, "", "terminal");
  }
  bool any() const { return reads_ || writes_ || terminal_; }

  bool reads_files() const override { return reads_; }
  bool writes_files() const override { return writes_; }
  bool runs_commands() const override { return terminal_; }

  boost::asio::awaitable<std::string> read_text_file(std::string path) override {
    json::value params = read_params(session_, std::move(path));
    auto calling = call("fs/read_text_file", std::move(params));
    json::value answer = co_await std::move(calling);
    co_return decoded<protocol::ReadTextFileResponse>(answer, "fs/read_text_file").content;
  }
  boost::asio::awaitable<void> write_text_file(std::string path, std::string content) override {
    json::value params = write_params(session_, std::move(path), std::move(content));
    auto calling = call("fs/write_text_file", std::move(params));
    co_await std::move(calling);
  }
  boost::asio::awaitable<std::string> create_terminal(std::string command, std::string cwd,
                                                      std::size_t output_limit) override {
    json::value params = terminal_params(session_, std::move(command), std::move(cwd), output_limit);
    auto calling = call("terminal/create", std::move(params));
    json::value answer = co_await std::move(calling);
    co_return decoded<protocol::CreateTerminalResponse>(answer, "terminal/create").terminalId;
  }
  boost::asio::awaitable<engine::TerminalExit> wait_for_terminal_exit(std::string terminal) override {
    json::value params = terminal_ref(session_, std::move(terminal));
    auto calling = call("terminal/wait_for_exit", std::move(params));
    json::value answer = co_await std::move(calling);
    if (!answer.is_object()) co_return engine::TerminalExit{};  // it exited; how is terminal/output's to say
    co_return exit_of(decoded<protocol::TerminalExitStatus>(answer, "terminal/wait_for_exit"));
  }
  boost::asio::awaitable<engine::TerminalOutput> terminal_output(std::string terminal) override {
    json::value params = terminal_ref(session_, std::move(terminal));
    auto calling = call("terminal/output", std::move(params));
    json::value answer = co_await std::move(calling);
    auto out = decoded<protocol::TerminalOutputResponse>(answer, "terminal/output");
    engine::TerminalOutput result{std::move(out.output), std::nullopt};
    if (out.exitStatus) result.exit = exit_of(*out.exitStatus);
    co_return result;
  }
  boost::asio::awaitable<void> kill_terminal(std::string terminal) override {
    json::value params = terminal_ref(session_, std::move(terminal));
    auto calling = call("terminal/kill", std::move(params));
    co_await std::move(calling);
  }
  boost::asio::awaitable<void> release_terminal(std::string terminal) override {
    json::value params = terminal_ref(session_, std::move(terminal));
    auto calling = call("terminal/release", std::move(params));
    co_await std::move(calling);
  }

private:
  template <class T> static T decoded(const json::value& answer, std::string_view method) {
    try {
      return wire::decode<T>(answer);
    } catch (const std::exception& e) {
      throw engine::EditorCallError("the editor's answer to " + std::string(method) + " is malformed: " + e.what(), false);
    }
  }

  // The client's failures as the tool runner knows them.
  boost::asio::awaitable<json::value> call(const char* method, json::value params) {
    if (!ctx_.channel.has_client()) throw engine::EditorCallError("there is no client to ask", false);
    try {
      auto calling = ctx_.channel.call_client(session_, method, std::move(params));
      co_return co_await std::move(calling);
    } catch (const protocol::ClientCallFailed& e) {
      throw engine::EditorCallError(e.what(), false);
    } catch (const protocol::ClientCallAborted& e) {
      throw engine::EditorCallError(e.what(), e.cancelled());
    }
  }

  HandlerContext& ctx_;
  std::string session_;
  bool reads_ = false;
  bool writes_ = false;
  bool terminal_ = false;
};

} // namespace

std::shared_ptr<engine::Editor> acp_editor(HandlerContext& ctx, const std::string& session_id) {
  if (!ctx.channel.has_client()) return nullptr;
  auto editor = std::make_shared<AcpEditor>(ctx, session_id);
  if (!editor->any()) return nullptr;
  return editor;
}

} // namespace acp::handlers
