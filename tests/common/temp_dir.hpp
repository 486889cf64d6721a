#pragma once
// Shared by the test executables: a private temporary directory for one test.

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <stdlib.h>

namespace acp::test {

/// A fresh directory (mode 0700) under $TMPDIR, else /tmp, removed with everything in it on
/// destruction. Its path is canonical: tests that compare paths with what the server resolves
/// (realpath) agree even when $TMPDIR is a symbolic link.
class TempDir {
public:
  /// `prefix` starts the directory's name, so a directory left behind by a crash says whose it is.
  explicit TempDir(std::string_view prefix = "dsh-test") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    path_ = std::filesystem::canonical(tmpl).string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::string operator/(std::string_view rel) const { return path_ + "/" + std::string(rel); }

  /// Writes `text` to the file `rel` in the directory (whose parent must exist); returns its path.
  std::string write(std::string_view rel, std::string_view text) const {
    std::string file = *this / rel;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

private:
  std::string path_;
};

} // namespace acp::test
