// The process log: one line per record with time, pid and level, appended to the log file.
//
// Never writes to the frame stream. Before init() (or if the file cannot be opened) records go
// nowhere rather than to stderr, because some ACP clients treat any stderr output as an error.
// Thread-safe: each record is one write(2) on an O_APPEND descriptor.
#pragma once

#include <string>
#include <string_view>

namespace acp::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

Level parse_level(std::string_view name);

/// Opens (creating with mode 0600, and its directory with 0700) the log file. Returns its fd, or -1.
/// A symbolic link or anything but a regular file is refused (as the store refuses them: the link
/// could point the log into a file of someone else's choosing); then `refused` says why.
int init(const std::string& path, Level level, std::string* refused = nullptr);

/// Records at `level` and above go to stderr (a command-line tool's log, never the server's: some
/// ACP clients take any stderr output for an error).
void to_stderr(Level level);

/// The fd of the open log file, or -1.
int fd();

void write(Level level, std::string_view message);
inline void error(std::string_view m) { write(Level::error, m); }
inline void warn(std::string_view m) { write(Level::warn, m); }
inline void info(std::string_view m) { write(Level::info, m); }
inline void debug(std::string_view m) { write(Level::debug, m); }
bool enabled(Level level);

} // namespace acp::log
