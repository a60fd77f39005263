# Cross-compiles glia for 64-bit ARM Linux with Debian's cross toolchain and the arm64 builds of
# its dependencies (scripts/setup_aarch64.sh installs both); scripts/test_aarch64.sh runs the result
# under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Binaries run with the arm64 C library of Debian's multiarch (the libc6:arm64 the libraries above
# pulled in, with its own loader), not the cross toolchain's copy in /usr/aarch64-linux-gnu: the two
# can be different builds, and a loader from one with the libc of the other hangs in the first
# pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/)
