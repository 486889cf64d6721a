// Kernel confinement of the commands the server runs itself (the bash tool without a client
// terminal): a Landlock ruleset under which writes are allowed only beneath the session's roots,
// the temporary directories and the usual device files. Reads, execution and the network are not
// restricted. Landlock needs Linux 5.19 (ABI 2: renames across directories) and the LSM enabled;
// elsewhere commands run unconfined and sandbox_name() says "none".
#pragma once

#include <string>
#include <vector>

namespace acp::support {

/// "landlock" when commands can be confined, else "none" (what initialize's _meta reports).
const char* sandbox_name();

/// Why commands run unconfined ("" when they do not), for the log and initialize's _meta.
const std::string& sandbox_missing_reason();

/// Directories every confined command may write besides the roots: /tmp, /var/tmp, /dev/shm and
/// $TMPDIR, those that exist.
std::vector<std::string> temporary_directories();

/// A Landlock ruleset (a close-on-exec descriptor the caller closes) allowing writes beneath each
/// of `writable` (directories; missing ones are skipped) and to /dev/null and its kind; -1 when
/// there is no sandbox. Throws std::system_error when the kernel refuses a rule.
int write_confinement(const std::vector<std::string>& writable);

} // namespace acp::support
