// Runs the model's tool calls for one session: arguments checked against the tool's parameters,
// paths confined to the session's roots, then the work done through the editor when the client
// can (fs/read_text_file sees unsaved buffers, fs/write_text_file shows the change, a terminal the
// user watches), else in the server (files, `bash -c` in a process group). Every failure — bad
// JSON, a wrong type, an unknown tool, a path outside the roots, the client's error — is a result
// the model reads (is_error), never a failed turn. Results are capped (head and tail kept).
// Blocking file work runs on the `blocking` executor, never on the caller's.
#pragma once

#include "engine/editor.hpp"
#include "tools/roots.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace acp::engine {

struct ToolLimits {
  std::size_t max_result_bytes = 64u << 10;
  std::chrono::milliseconds default_timeout{120000};
  std::chrono::milliseconds max_timeout{600000};
  /// How long each clean-up call in the editor's terminal (kill, output, release after a timeout or
  /// a cancel) is awaited: a client that never answers one must not hold the prompt's answer.
  std::chrono::milliseconds cleanup_grace{10000};
};

struct FileEdit {
  std::string path;                     ///< absolute
  std::optional<std::string> old_text;  ///< nullopt: created
  std::string new_text;
};

/// How a command ended, in the terms of ACP's terminal exit status (its card's status and text).
struct CommandExit {
  std::optional<std::int64_t> exit_code;  ///< it exited
  std::optional<std::string> signal;      ///< it was killed by this signal ("SIGKILL")
  std::optional<std::chrono::milliseconds> timed_out;  ///< killed at this timeout
};

struct ToolOutcome {
  std::string text;  ///< what the model reads
  bool is_error = false;
  bool cancelled = false;
  std::optional<FileEdit> edit;            ///< write / edit: the change made (a diff card)
  std::optional<std::string> terminal_id;  ///< bash in the editor's terminal
  std::optional<boost::json::array> todos; ///< todo_write: the list (a plan)
  std::optional<CommandExit> command_exit; ///< bash: how the command ended
};

/// Makes what a tool produced text before it reaches the log, a frame or the model: a file's bytes,
/// a command's output, a file name or a server's message may be anything, so each ill-formed UTF-8
/// sequence of the result and of a change's path and texts becomes U+FFFD.
void make_text_valid(ToolOutcome& out);

class ToolRunner {
public:
  /// `editor` null: the server reads, writes and runs commands itself.
  ToolRunner(tools::Roots roots, std::shared_ptr<Editor> editor, boost::asio::any_io_executor blocking,
             ToolLimits limits = {}, std::vector<std::string> hidden_env = {});

  /// Runs a built-in tool (read, write, edit, bash, glob, grep, todo_write). Cancelling the awaiting
  /// operation stops the work (a command is killed, a terminal killed and released) and returns an
  /// outcome with `cancelled` set.
  /// `on_terminal` is told the id of the editor's terminal a command runs in, once it exists.
  boost::asio::awaitable<ToolOutcome> run(std::string name, std::string arguments,
                                          std::function<void(const std::string&)> on_terminal = {});

  const tools::Roots& roots() const { return roots_; }

private:
  boost::asio::awaitable<ToolOutcome> read(const boost::json::object& args);
  boost::asio::awaitable<ToolOutcome> write(const boost::json::object& args);
  boost::asio::awaitable<ToolOutcome> edit(const boost::json::object& args);
  boost::asio::awaitable<ToolOutcome> bash(const boost::json::object& args,
                                           const std::function<void(const std::string&)>& on_terminal);
  /// bash in the editor's terminal: created, awaited up to `timeout`, killed when it timed out or
  /// the turn was cancelled, its output read and the terminal released whatever happened.
  boost::asio::awaitable<ToolOutcome> bash_in_terminal(const std::string& command, const std::string& workdir,
                                                       std::chrono::milliseconds timeout,
                                                       const std::function<void(const std::string&)>& on_terminal);
  boost::asio::awaitable<ToolOutcome> search(const std::string& name, const boost::json::object& args);
  boost::asio::awaitable<std::optional<std::string>> editor_text(const std::string& path, bool on_disk);

  tools::Roots roots_;
  std::shared_ptr<Editor> editor_;
  boost::asio::any_io_executor blocking_;
  ToolLimits limits_;
  std::vector<std::string> hidden_env_;
};

/// todo_write's list, checked as the harness checks it; throws tools::ToolFailure with its message.
boost::json::array checked_todos(const boost::json::object& args);

/// `Updated todo list: P pending, I in progress, C completed.` (the harness's success text).
std::string todo_summary(const boost::json::array& todos);

} // namespace acp::engine
