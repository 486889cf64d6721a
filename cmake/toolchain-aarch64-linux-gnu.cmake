# Cross build for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and the
# libraries of Debian's arm64 architecture installed beside the build machine's (multiarch:
# `dpkg --add-architecture arm64`, then the `:arm64` -dev packages; ./dev installs them). Used by
# `./dev release` and `./dev test` for build-aarch64/ (docs/release.md, Platforms).
#
# No sysroot: Debian puts arm64 libraries in /usr/lib/aarch64-linux-gnu, which CMake searches
# through CMAKE_LIBRARY_ARCHITECTURE (taken from the compiler), and the build machine's own
# /usr/lib/x86_64-linux-gnu is never on that path.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# pkg-config must not answer with the build machine's .pc files (their -L paths are x86_64).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
