#include "log.hpp"

#include "iso_time.hpp"
#include "support/file_io.hpp"
#include "utf8.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace acp::log {
namespace {
std::atomic<int> g_fd{-1};
std::atomic<int> g_level{static_cast<int>(Level::info)};
constexpr const char* kNames[] = {"error", "warn", "info", "debug"};
} // namespace

Level parse_level(std::string_view name) {
  for (int i = 0; i < 4; ++i)
    if (name == kNames[i]) return static_cast<Level>(i);
  return Level::info;
}

int init(const std::string& path, Level level, std::string* refused) {
  g_level = static_cast<int>(level);
  support::make_parent_dirs(path, 0700);
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader (it is refused below;
  // on a regular file the flag changes nothing).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  const int open_errno = errno;
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    fd = -1;
    if (refused) *refused = "log file " + path + " is not a regular file: not logging";
  } else if (fd < 0 && open_errno == ELOOP && refused) {
    *refused = "log file " + path + " is a symbolic link: not logging";
  }
  g_fd = fd;
  return fd;
}

void to_stderr(Level level) {
  g_level = static_cast<int>(level);
  g_fd = STDERR_FILENO;
}

int fd() { return g_fd; }

bool enabled(Level level) { return g_fd >= 0 && static_cast<int>(level) <= g_level; }

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, " [%d] %s ", static_cast<int>(::getpid()), kNames[static_cast<int>(level)]);
  std::string line = support::iso_time(ms) + stamp;
  // One record is one line: embedded newlines would make the log ambiguous. Messages quote what
  // others wrote (a server's stderr, a file name): the log stays UTF-8 text all the same.
  for (char c : message) line.push_back(c == '\n' ? ' ' : c);
  support::replace_invalid_utf8(line);
  line.push_back('\n');
  [[maybe_unused]] auto written = ::write(g_fd, line.data(), line.size());
}

} // namespace acp::log
