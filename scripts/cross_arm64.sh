#!/usr/bin/env bash
# The aarch64 cross-build, run under qemu-user.
#   scripts/cross_arm64.sh [build]   install what is missing, build into build-arm64/
#                                    (build-arm64/apps/pola is the aarch64 CLI)
#   scripts/cross_arm64.sh run ARGS  run that CLI under qemu
#   scripts/cross_arm64.sh test      ctest -L arm64 in build-arm64 (tests run under qemu)
#   scripts/cross_arm64.sh check     test, then the aarch64 CLI against the x86-64 one
#                                    (tests/arm64/check_arm64.py: logits, classify, a
#                                    1,000-image Fashion eval) and the fast parity set
#                                    against the PyTorch reference; needs build/apps/pola
#                                    (POLA_ARM64_CTEST_EXCLUDE: a ctest -E regex;
#                                    POLA_ARM64_PARITY_ONLY: parity.py --only)
#   (build-arm64/pola-qemu, written by build, runs the aarch64 CLI from any script.)
# What it installs: the arm64 dpkg architecture, crossbuild-essential-arm64 and
# qemu-user-static (apt), and the arm64 libraries the engine links (oneDNN,
# libzip and their dependencies) downloaded as .debs and unpacked into
# POLA_ARM64_ROOT (default /opt/pola-arm64), not installed: :arm64 -dev
# packages conflict with the amd64 python3-torch the x86 tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${POLA_ARM64_ROOT:-/opt/pola-arm64}
BUILD=${POLA_ARM64_BUILD:-build-arm64}
JOBS=${POLA_JOBS:-2}
APT=(apt-get -o DPkg::Lock::Timeout=900 -y -qq)
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# The arm64 packages unpacked into ROOT: the libraries and their run-time
# dependencies that the cross toolchain's sysroot lacks.
# (zipcmp, zipmerge, ziptool: libzip-dev's CMake config checks that they exist.)
# libcpp-httplib (the server's HTTP library) is built with OpenSSL, zlib and
# Brotli, whose headers and libraries its pkg-config file asks for.
DEBS=(libdnnl2 libdnnl-dev libzip4 libzip-dev zipcmp zipmerge ziptool zlib1g zlib1g-dev libbz2-1.0 libssl3
      libssl-dev libcpp-httplib0.11 libcpp-httplib-dev libbrotli1 libbrotli-dev)
LIBDIRS="$ROOT/usr/lib/aarch64-linux-gnu:$ROOT/lib/aarch64-linux-gnu"

install_missing() {
  local need_update=0 pkgs=()
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    need_update=1
  fi
  command -v aarch64-linux-gnu-g++ >/dev/null || pkgs+=(crossbuild-essential-arm64)
  command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
  # The marker holds the package list it was made from: a longer list unpacks again.
  local unpacked=0
  [ -f "$ROOT/.complete" ] && [ "$(cat "$ROOT/.complete")" = "${DEBS[*]}" ] && unpacked=1
  if [ $unpacked = 0 ] || [ ${#pkgs[@]} -gt 0 ]; then
    [ $need_update = 1 ] || [ -z "$(ls /var/lib/apt/lists/*arm64_Packages 2>/dev/null)" ] && need_update=1
  fi
  [ $need_update = 1 ] && $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  [ ${#pkgs[@]} -gt 0 ] && $SUDO "${APT[@]}" install "${pkgs[@]}"
  if [ $unpacked = 0 ]; then
    local dl
    dl=$(mktemp -d)
    (cd "$dl" && apt-get download -qq "${DEBS[@]/%/:arm64}")
    $SUDO mkdir -p "$ROOT"
    for deb in "$dl"/*.deb; do $SUDO dpkg-deb -x "$deb" "$ROOT"; done
    rm -rf "$dl"
    # The header-only dependencies and their CMake configs, linked in from
    # the build machine's packages (no machine code in them): found inside
    # ROOT, their configs point at ROOT/usr/include, never at the host's
    # /usr/include, whose glibc headers must not shadow the cross sysroot's.
    local h
    for h in xsimd nlohmann CLI stb doctest xxhash.h; do
      [ -e "/usr/include/$h" ] && $SUDO ln -sfn "/usr/include/$h" "$ROOT/usr/include/$h"
    done
    $SUDO mkdir -p "$ROOT/usr/lib/aarch64-linux-gnu/cmake" "$ROOT/usr/share/cmake" "$ROOT/usr/lib/cmake"
    $SUDO ln -sfn /usr/lib/x86_64-linux-gnu/cmake/xsimd "$ROOT/usr/lib/aarch64-linux-gnu/cmake/xsimd"
    for h in nlohmann_json CLI11; do $SUDO ln -sfn "/usr/share/cmake/$h" "$ROOT/usr/share/cmake/$h"; done
    $SUDO ln -sfn /usr/lib/cmake/doctest "$ROOT/usr/lib/cmake/doctest"
    echo "${DEBS[*]}" | $SUDO tee "$ROOT/.complete" >/dev/null
  fi
}

build() {
  install_missing
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" \
      -DPOLA_ARM64_ROOT="$ROOT" -DPOLA_BUILD_PYTHON=OFF -DPOLA_BUILD_BENCH=OFF
  fi
  # GCC 12's cross compiler is not asked for every test target (an earlier
  # attempt hit an ICE on tests/api/test_cpp_features_api.cpp): the CLI and
  # the targets the arm64 ctest label runs.
  cmake --build "$BUILD" -j"$JOBS" --target ${POLA_ARM64_TARGETS:-pola}
  local bin
  bin=$(cd "$BUILD" && pwd)/apps/pola
  printf '#!/bin/sh\n# The aarch64 pola under qemu-user (scripts/cross_arm64.sh).\nexec env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH="%s" qemu-aarch64-static "%s" "$@"\n' \
    "$LIBDIRS" "$bin" >"$BUILD/pola-qemu"
  chmod +x "$BUILD/pola-qemu"
}

check() {
  local x86="${POLA_BUILD_DIR:-build}/apps/pola"
  [ -x "$x86" ] || { echo "cross_arm64.sh check: no x86-64 $x86 to compare with (scripts/build.sh)" >&2; exit 2; }
  ctest --test-dir "$BUILD" -L arm64 --output-on-failure ${POLA_ARM64_CTEST_EXCLUDE:+-E "$POLA_ARM64_CTEST_EXCLUDE"}
  /usr/bin/python3 tests/arm64/check_arm64.py --x86 "$x86" --arm64 "$BUILD/pola-qemu" --workdir "$BUILD/check"
  /usr/bin/python3 tests/parity/parity.py --pola "$BUILD/pola-qemu" --suite fast --threads 2 \
    --workdir "$BUILD/parity_fast" ${POLA_ARM64_PARITY_ONLY:+--only "$POLA_ARM64_PARITY_ONLY"}
}

case "${1:-build}" in
build) build ;;
run) shift; exec "$BUILD/pola-qemu" "$@" ;;
test) ctest --test-dir "$BUILD" -L arm64 --output-on-failure ;;
check) check ;;
*) echo "usage: $0 [build|run ARGS...|test|check]" >&2; exit 2 ;;
esac
