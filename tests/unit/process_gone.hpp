// Whether a process has ended, for tests that check nothing they started is left behind.
#pragma once

#include <fstream>
#include <string>

/// Gone: no /proc entry, or a zombie.
inline bool gone(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && line[close + 2] == 'Z';
}
