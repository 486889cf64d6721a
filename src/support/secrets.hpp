// Secrets we hold (provider keys, the store password) and the processes we start: they never get
// them. A child's environment is ours without them (child_process.hpp), and the environment block
// the kernel shows as /proc/<our pid>/environ — readable by any process of ours running as root,
// whatever else we do — has them blanked at start-up.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace acp::support {

/// The variables no process we start inherits: DEEPSEEK_API_KEY, OPENAI_API_KEY, PGPASSWORD.
/// (PGPASSFILE is a path, not a secret: the file it names is as readable as ~/.pgpass.)
const std::vector<std::string>& secret_variables();

bool is_secret_variable(std::string_view name);

/// Once, first thing in main (before any thread): each secret variable gets a private copy in our
/// environment (getenv and libpq still find it) and its bytes in the block the process started
/// with are overwritten with NULs. Also makes the process non-dumpable, so that a process we start
/// running as the same (non-root) user cannot read our memory either.
void hide_secrets_from_proc();

} // namespace acp::support
