#include "support/key_file.hpp"

#include "support/file_io.hpp"

#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace acp::support {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

// Best effort: the key is in place either way; only its durability across a crash is at stake.
void sync_directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  (void)fsync_dir(AT_FDCWD, dir.c_str());
}

} // namespace

std::optional<std::string> api_key_text(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  if (text.size() > 1024) return std::nullopt;
  for (unsigned char c : text)
    if (c <= 0x20 || c >= 0x7f) return std::nullopt;
  return std::string(text);
}

std::string read_key_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string text(4096, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return api_key_text(text).value_or(std::string());
}

void write_key_file(const std::string& path, const std::string& key) {
  if (!make_parent_dirs(path, 0700)) fail("cannot create the directory of " + path);
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  ::unlink(temporary.c_str());  // one a killed --setup of this pid left
  {
    // 0600 from its creation: the key is never in a file anyone else may read, not even briefly.
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0) fail("cannot create " + temporary);
    try {
      if (const int err = write_all(fd.get(), key + "\n")) {
        errno = err;
        fail("cannot write " + temporary);
      }
      if (::fsync(fd.get()) != 0) fail("cannot sync " + temporary);
    } catch (...) {
      ::unlink(temporary.c_str());
      throw;
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    errno = error;
    fail("cannot replace " + path);
  }
  sync_directory_of(path);
}

bool remove_key_file(const std::string& path) {
  if (::unlink(path.c_str()) == 0) {
    sync_directory_of(path);
    return true;
  }
  if (errno == ENOENT) return false;
  fail("cannot remove " + path);
}

} // namespace acp::support
