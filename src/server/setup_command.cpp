#include "server/setup_command.hpp"

#include "support/key_file.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <iterator>
#include <cstring>
#include <system_error>

#include <signal.h>
#include <termios.h>
#include <unistd.h>

namespace acp::server {

namespace {

// The terminal's settings while echo is off, restored by a signal too: an interrupted set-up must
// not leave the user's terminal silent.
struct termios g_saved {};
std::atomic<int> g_echo_off_fd{-1};
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void restore_and_exit(int signo) {
  const int fd = g_echo_off_fd.load();
  if (fd >= 0) ::tcsetattr(fd, TCSAFLUSH, &g_saved);
  ::_exit(128 + signo);
}

class EchoOff {
public:
  explicit EchoOff(int fd) {
    if (!::isatty(fd) || ::tcgetattr(fd, &g_saved) != 0) return;
    struct termios quiet = g_saved;
    quiet.c_lflag &= static_cast<tcflag_t>(~(ECHO | ECHONL));
    quiet.c_lflag |= ICANON;
    g_echo_off_fd = fd;
    struct sigaction restore {};
    restore.sa_handler = restore_and_exit;
    sigemptyset(&restore.sa_mask);
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &restore, &previous_[i]);
    if (::tcsetattr(fd, TCSAFLUSH, &quiet) != 0) {
      put_back_handlers();
      return;
    }
    fd_ = fd;
  }
  ~EchoOff() {
    if (fd_ < 0) return;
    ::tcsetattr(fd_, TCSAFLUSH, &g_saved);
    put_back_handlers();
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;
  bool active() const noexcept { return fd_ >= 0; }

private:
  void put_back_handlers() {
    g_echo_off_fd = -1;
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  }
  int fd_ = -1;
  struct sigaction previous_[std::size(kSignals)] {};
};

} // namespace

std::optional<std::string> read_secret_line(int fd, const char* prompt, std::FILE* out) {
  // Echo off before the prompt shows: nothing typed in answer to it is ever shown.
  EchoOff quiet(fd);
  std::fputs(prompt, out);
  std::fflush(out);
  std::string line;
  bool any = false;
  char c = 0;
  for (;;) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    any = true;
    if (c == '\n' || c == '\r') break;
    if (line.size() < 4096) line += c;
  }
  // The Enter the user typed was not echoed either: end the prompt's line.
  if (quiet.active()) {
    std::fputc('\n', out);
    std::fflush(out);
  }
  if (!any) return std::nullopt;
  return line;
}

int run_setup(const support::Config& config) {
  std::fprintf(stderr,
               "dsh-acp set-up: the DeepSeek API key is stored in %s (mode 0600) and used when DEEPSEEK_API_KEY "
               "is not set.\nKeys: https://platform.deepseek.com/api_keys\n",
               config.key_file.c_str());
  std::optional<std::string> line = read_secret_line(STDIN_FILENO, "DeepSeek API key: ", stderr);
  if (!line) {
    std::fprintf(stderr, "dsh-acp: no key given; nothing stored\n");
    return 1;
  }
  std::optional<std::string> key = support::api_key_text(*line);
  // What was typed is never repeated back: it may be a key with a typo in it.
  if (!key) {
    std::fprintf(stderr, "dsh-acp: that is not an API key (1 to 1024 printable characters, no spaces); nothing stored\n");
    return 1;
  }
  try {
    support::write_key_file(config.key_file, *key);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "dsh-acp: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "dsh-acp: key stored in %s\n", config.key_file.c_str());
  return 0;
}

} // namespace acp::server
