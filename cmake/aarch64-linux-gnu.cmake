# Cross toolchain for the static aarch64 server agent (scripts/build-agents.sh):
# Debian 12's g++-aarch64-linux-gnu with the arm64 -dev packages installed
# through multiarch (libraries in /usr/lib/aarch64-linux-gnu, headers shared
# in /usr/include). Tests and gtest discovery run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
# pkg-config (FindOpenSSL asks it first) sees the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
