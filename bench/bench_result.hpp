// The machine-readable summary line every benchmark program prints beside its human-readable output:
// `BENCH-RESULT {"figure":...,"value":...,"unit":...}`. bench/run collects these lines into the final
// table (bench/report.py holds the targets); figure names are the keys listed there.
#pragma once

#include <cstdio>
#include <string>

namespace bench {

/// `extra` is a JSON member list without braces (e.g. "\"note\":\"raw\""), or empty.
inline void result(const std::string& figure, double value, const char* unit, const std::string& extra = "") {
  std::printf("BENCH-RESULT {\"figure\":\"%s\",\"value\":%.6g,\"unit\":\"%s\"%s%s}\n", figure.c_str(), value, unit,
              extra.empty() ? "" : ",", extra.c_str());
  std::fflush(stdout);
}

} // namespace bench
