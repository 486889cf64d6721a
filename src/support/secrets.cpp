#include "support/secrets.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/prctl.h>

extern char** environ;

namespace acp::support {

const std::vector<std::string>& secret_variables() {
  static const std::vector<std::string> names{"DEEPSEEK_API_KEY", "OPENAI_API_KEY", "PGPASSWORD"};
  return names;
}

bool is_secret_variable(std::string_view name) {
  for (const auto& s : secret_variables())
    if (name == s) return true;
  return false;
}

void hide_secrets_from_proc() {
  // /proc/<pid>/environ reads the original block (mm->env_start..env_end), not `environ`: setenv
  // moves the variable to the heap, and the old bytes are then ours to blank. Re-executing
  // ourselves without the secrets would do the same at the cost of a second start-up.
  struct Found {
    char* bytes;
    std::string name, value;
  };
  std::vector<Found> found;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq && is_secret_variable(std::string_view(*e, static_cast<std::size_t>(eq - *e))))
      found.push_back({*e, std::string(const_cast<const char*>(*e), eq), std::string(eq + 1)});
  }
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    // unsetenv drops every occurrence; the first one given wins, as getenv would have chosen it.
    ::unsetenv(it->name.c_str());
    ::setenv(it->name.c_str(), it->value.c_str(), 1);
  }
  for (auto& f : found) std::memset(f.bytes, 0, std::strlen(f.bytes));
  // Root keeps CAP_SYS_PTRACE and reads us regardless; for everyone else this closes /proc/<pid>/mem.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

} // namespace acp::support
