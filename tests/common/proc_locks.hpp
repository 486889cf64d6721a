#pragma once
// Shared by the unit and store test executables: how many flock() calls of this process are waiting.

#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace acp::test {

/// Blocked flock() waiters of this process: the `->` lines of /proc/locks naming our pid. A test
/// waits on this to know a lock wait has begun, instead of sleeping.
inline int blocked_flocks_here() {
  std::ifstream locks("/proc/locks");
  std::string line;
  int n = 0;
  const std::string pid = std::to_string(::getpid());
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string index, arrow, kind, advisory, mode, owner;
    in >> index >> arrow >> kind >> advisory >> mode >> owner;
    if (arrow == "->" && kind == "FLOCK" && owner == pid) ++n;
  }
  return n;
}

} // namespace acp::test
