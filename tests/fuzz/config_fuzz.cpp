// Fuzz target `config`: load_config with a config file, environment variables and flags taken from
// the input. Layout: the config file's text, then optional sections separated by 0x1E: environment
// lines "NAME=value", then flags one per line. The file is written to a private temporary directory
// and named by DSH_ACP_CONFIG; inputs cannot name another file (--config and DSH_ACP_CONFIG are
// dropped), so a run never reads /dev/stdin or the developer's own configuration.
// Property: load_config either throws ConfigError or returns a configuration.
#include "fuzz_support.hpp"

#include "support/config.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace {

// A private directory for the file, removed at exit.
class TempConfig {
public:
  TempConfig() {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/dsh-fuzz-config.XXXXXX";
    if (!::mkdtemp(dir_.data())) dsh_fuzz::violated("mkdtemp failed");
    path_ = dir_ + "/config.json";
  }
  ~TempConfig() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

private:
  std::string dir_, path_;
};

const std::string& config_path() {
  static const TempConfig temp;
  return temp.path();
}

void write_file(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) dsh_fuzz::violated("cannot write the config file");
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) dsh_fuzz::violated("cannot write the config file");
    done += std::size_t(n);
  }
  ::close(fd);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto sections = dsh_fuzz::split(in, '\x1e');
  const std::string path = config_path();
  write_file(path, sections[0]);

  acp::support::Environment env;
  if (sections.size() > 1) {
    for (std::string_view line : dsh_fuzz::split(sections[1], '\n')) {
      auto eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  }
  env["DSH_ACP_CONFIG"] = path;
  std::vector<std::string> args;
  if (sections.size() > 2) {
    for (std::string_view line : dsh_fuzz::split(sections[2], '\n')) {
      if (line.rfind("--config", 0) == 0) continue;
      args.emplace_back(line);
    }
  }
  try {
    acp::support::CliResult result = acp::support::load_config(args, env);
    if (result.action == acp::support::CliAction::run && result.config.config_file != path)
      dsh_fuzz::violated("the named config file was not read");
  } catch (const acp::support::ConfigError& e) {
    (void)e.what();
  }
  return 0;
}
