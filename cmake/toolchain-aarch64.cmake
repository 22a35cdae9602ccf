# Cross-build for aarch64-linux-gnu (Debian's crossbuild-essential-arm64).
# The arm64 libraries (oneDNN, libzip and their dependencies) are unpacked by
# scripts/cross_arm64.sh into POLA_ARM64_ROOT (default /opt/pola-arm64) rather
# than installed as :arm64 packages, which would conflict with the amd64
# python3-torch the x86 tests need. Header-only dependencies (xsimd, stb,
# nlohmann-json, CLI11, doctest, xxhash) come from the build machine's
# /usr/include: they contain no machine code until compiled here.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT POLA_ARM64_ROOT)
  if(DEFINED ENV{POLA_ARM64_ROOT})
    set(POLA_ARM64_ROOT "$ENV{POLA_ARM64_ROOT}")
  else()
    set(POLA_ARM64_ROOT /opt/pola-arm64)
  endif()
endif()
# try_compile projects see the same root.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES POLA_ARM64_ROOT)

# Libraries: the unpacked arm64 debs first, then the cross toolchain's own.
set(CMAKE_FIND_ROOT_PATH "${POLA_ARM64_ROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_PATH "${POLA_ARM64_ROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Headers and CMake package configs: the root first, then the host's
# (architecture-independent) header-only packages.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
list(APPEND CMAKE_PREFIX_PATH "${POLA_ARM64_ROOT}/usr")

# The unpacked libraries' own dependencies (libdnnl -> libOpenCL, libzip ->
# libssl...) are resolved at link time through rpath-link.
set(_pola_arm64_libdirs "${POLA_ARM64_ROOT}/usr/lib/aarch64-linux-gnu:${POLA_ARM64_ROOT}/lib/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_pola_arm64_libdirs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_pola_arm64_libdirs}")

# Tests and any built tool run under qemu. QEMU_LD_PREFIX is the cross
# toolchain's sysroot (dynamic loader, libc, libgomp, libstdc++); the unpacked
# libraries come through LD_LIBRARY_PATH, which qemu hands to the guest loader.
# (qemu's -L with a prefix holding the unpacked debs made OpenMP hang in an
# earlier attempt, hence the loader prefix alone.)
set(CMAKE_CROSSCOMPILING_EMULATOR
    env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH=${_pola_arm64_libdirs} qemu-aarch64-static)

# pkg-config (the server's cpp-httplib) reads the arm64 .pc files of the root,
# with their paths moved under it, never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "${POLA_ARM64_ROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${POLA_ARM64_ROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${POLA_ARM64_ROOT}")
# The unpacked packages' architecture-specific headers (openssl/opensslconf.h),
# which the cross compiler's own search path does not cover.
set(CMAKE_C_FLAGS_INIT "-isystem ${POLA_ARM64_ROOT}/usr/include/aarch64-linux-gnu")
set(CMAKE_CXX_FLAGS_INIT "-isystem ${POLA_ARM64_ROOT}/usr/include/aarch64-linux-gnu")
