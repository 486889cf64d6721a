#include "tools/text_window.hpp"

#include "support/utf8.hpp"
#include "tools/roots.hpp"
#include "tools/tool_failure.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace acp::tools {

namespace {

// A NUL in the first bytes marks a binary file (git's rule).
constexpr std::size_t kBinaryCheckBytes = 8192;


} // namespace

TextWindow::TextWindow(ReadRequest request) : request_(request) {
  if (request_.offset < 1) throw ToolFailure("offset must be 1 or more");
  if (request_.limit < 1) throw ToolFailure("limit must be 1 or more");
}

bool TextWindow::showing() const {
  const std::int64_t n = total_lines_ + 1;
  return !capped_ && n >= request_.offset && shown_ < request_.limit;
}

void TextWindow::feed(std::string_view chunk) {
  if (head_checked_ < kBinaryCheckBytes) {
    std::size_t n = std::min(chunk.size(), kBinaryCheckBytes - head_checked_);
    if (std::memchr(chunk.data(), '\0', n)) throw ToolFailure("this is a binary file, not text");
    head_checked_ += n;
  }
  // A shown line keeps enough bytes for max_line_chars + 1 code points (to know it was cut).
  const std::size_t keep = (request_.max_line_chars + 1) * 4;
  std::size_t i = 0;
  while (i < chunk.size()) {
    const char* nl = static_cast<const char*>(std::memchr(chunk.data() + i, '\n', chunk.size() - i));
    const std::size_t end = nl ? std::size_t(nl - chunk.data()) : chunk.size();
    if (showing() && line_.size() < keep) line_.append(chunk.data() + i, std::min(end - i, keep - line_.size()));
    if (end > i) line_open_ = true;
    if (!nl) return;
    end_line();
    i = end + 1;
  }
}

void TextWindow::end_line() {
  const bool shown = showing();
  ++total_lines_;
  line_open_ = false;
  if (!shown) {
    line_.clear();
    return;
  }
  std::string_view raw = line_;
  std::string text;
  std::size_t chars = 0;
  bool cut = false;
  for (std::size_t i = 0; i < raw.size();) {
    // The line's carriage return, when it ends a line kept whole.
    if (raw[i] == '\r' && i + 1 == raw.size()) break;
    if (chars == request_.max_line_chars) {
      cut = true;
      break;
    }
    auto d = support::decode_utf8(raw, i);
    support::append_utf8(text, d.cp);
    i += d.length;
    ++chars;
  }
  line_.clear();
  if (cut) text += "... (line truncated to " + std::to_string(request_.max_line_chars) + " chars)";
  const std::size_t bytes = text.size() + (shown_ > 0 ? 1 : 0);
  if (shown_bytes_ + bytes > request_.max_bytes) {
    capped_ = true;
    return;
  }
  shown_bytes_ += bytes;
  if (shown_ > 0) body_ += '\n';
  body_ += std::to_string(total_lines_) + ": " + text;
  ++shown_;
  last_shown_ = total_lines_;
}

std::string TextWindow::finish(std::string_view display_path) {
  if (line_open_) end_line();
  const std::int64_t offset = request_.offset;
  if (!capped_ && offset > total_lines_ && !(total_lines_ == 0 && offset == 1))
    throw ToolFailure("offset " + std::to_string(offset) + " is out of range for \"" + std::string(display_path) + "\" (" +
                      std::to_string(total_lines_) + " lines)");
  const std::int64_t end_line = shown_ > 0 ? last_shown_ : offset - 1;
  std::string footer;
  if (capped_)
    footer = "(Output capped. Showing lines " + std::to_string(offset) + "-" + std::to_string(end_line) +
             ". Use offset=" + std::to_string(end_line + 1) + " to continue.)";
  else if (end_line < total_lines_)
    footer = "(Showing lines " + std::to_string(offset) + "-" + std::to_string(end_line) + " of " +
             std::to_string(total_lines_) + ". Use offset=" + std::to_string(end_line + 1) + " to continue.)";
  else
    footer = "(End of file - total " + std::to_string(total_lines_) + " lines)";
  std::string out = "<path>" + std::string(display_path) + "</path>\n<type>file</type>\n<content>\n";
  if (shown_ > 0) out += body_ + "\n\n";
  out += footer + "\n</content>";
  return out;
}

std::string read_file_window(const Roots& roots, std::string_view path, const ReadRequest& request) {
  TextWindow window(request);
  // O_NONBLOCK: a FIFO planted under the file's name opens at once (and is refused below) instead of
  // blocking the tool until a writer comes.
  Opened file = roots.open(path, O_RDONLY | O_NONBLOCK);
  const int fd = file.fd.get();
  const std::string& display_path = file.path;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ToolFailure("cannot read \"" + std::string(display_path) + "\": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is a directory; use glob to list files");
  if (!S_ISREG(st.st_mode)) throw ToolFailure("\"" + std::string(display_path) + "\" is not a regular file");
  std::string buffer(64u << 10, '\0');
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ToolFailure("cannot read \"" + std::string(display_path) + "\": " + std::strerror(errno));
    }
    if (n == 0) break;
    window.feed(std::string_view(buffer.data(), std::size_t(n)));
  }
  return window.finish(display_path);
}

} // namespace acp::tools
