// What the built-in tools ask of the editor, in the engine's own terms: its view of a file (unsaved
// buffers included), a write the user sees, a command in a terminal the user watches. The handlers
// implement it over the client connection (handlers/acp_editor.hpp); nothing here knows an ACP method
// name or a JSON shape. A session whose client offers none of these has no Editor: the server then
// reads, writes and runs commands itself.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace acp::engine {

/// A request to the editor failed; `cancelled`: it was withdrawn because the turn was cancelled.
class EditorCallError : public std::runtime_error {
public:
  EditorCallError(const std::string& message, bool cancelled) : std::runtime_error(message), cancelled_(cancelled) {}
  bool cancelled() const { return cancelled_; }

private:
  bool cancelled_;
};

/// How a command in the editor's terminal ended: an exit code, or the signal that ended it.
struct TerminalExit {
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> signal;
};

/// What a terminal printed so far (cut by the editor at the limit it was created with), and how it
/// ended when it has.
struct TerminalOutput {
  std::string output;
  std::optional<TerminalExit> exit;
};

class Editor {
public:
  virtual ~Editor() = default;

  virtual bool reads_files() const = 0;
  virtual bool writes_files() const = 0;
  virtual bool runs_commands() const = 0;

  // Each throws EditorCallError when the editor refuses or the call is withdrawn (cancelling the
  // awaiting operation withdraws it).
  /// The editor's text of the file at the absolute `path`.
  virtual boost::asio::awaitable<std::string> read_text_file(std::string path) = 0;
  virtual boost::asio::awaitable<void> write_text_file(std::string path, std::string content) = 0;
  /// Starts `bash -c command` in `cwd`; returns the terminal's id.
  virtual boost::asio::awaitable<std::string> create_terminal(std::string command, std::string cwd,
                                                              std::size_t output_limit) = 0;
  virtual boost::asio::awaitable<TerminalExit> wait_for_terminal_exit(std::string terminal) = 0;
  virtual boost::asio::awaitable<TerminalOutput> terminal_output(std::string terminal) = 0;
  virtual boost::asio::awaitable<void> kill_terminal(std::string terminal) = 0;
  virtual boost::asio::awaitable<void> release_terminal(std::string terminal) = 0;
};

} // namespace acp::engine
