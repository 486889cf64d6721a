// What the `read` tool shows the model: a window of a text file's lines, each numbered, with a
// footer saying where the window ends (the harness's read format: `<path>`, `<type>`, `<content>`
// with `N: text` lines). Fed the file in chunks, it keeps only the window: memory follows the
// output, not the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace acp::tools {

struct ReadRequest {
  std::int64_t offset = 1;             ///< 1-based first line
  std::int64_t limit = 2000;           ///< lines at most (also the cap)
  std::size_t max_line_chars = 2000;   ///< longer lines are cut, with a note
  std::size_t max_bytes = 50u << 10;   ///< selected text at most; the window ends early past it
};

class TextWindow {
public:
  explicit TextWindow(ReadRequest request);

  /// The next bytes of the file, in order; chunk boundaries mean nothing. Throws ToolFailure for a
  /// NUL byte (a binary file). Malformed UTF-8 shows as U+FFFD.
  void feed(std::string_view chunk);

  /// The model's text. Throws ToolFailure when the offset lies past the last line.
  std::string finish(std::string_view display_path);

private:
  bool showing() const;
  void end_line();

  ReadRequest request_;
  std::size_t head_checked_ = 0;  ///< bytes looked at for a NUL (the first 8 KiB)
  std::string line_;              ///< the shown line's bytes so far, at most what max_line_chars needs
  bool line_open_ = false;        ///< bytes seen since the last newline
  std::int64_t total_lines_ = 0;
  std::int64_t shown_ = 0;
  std::int64_t last_shown_ = 0;
  std::size_t shown_bytes_ = 0;
  bool capped_ = false;
  std::string body_;
};

class Roots;

/// Reads the regular file `path` names, opened beneath the roots, through a TextWindow; the window's
/// `<path>` is the file's absolute path. Throws ToolFailure.
std::string read_file_window(const Roots& roots, std::string_view path, const ReadRequest& request);

} // namespace acp::tools
