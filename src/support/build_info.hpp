#pragma once

namespace acp::support {

// Defined in build_info.cpp, which cmake/build_info.cmake writes at build time.
extern const char* const build_version;  ///< the project's version (CMakeLists.txt)
extern const char* const build_commit;   ///< abbreviated commit of the source tree, or "unknown"

} // namespace acp::support
