#!/usr/bin/env bash
# The aarch64 cross-build, run under qemu-user.
#   scripts/cross_arm64.sh [build]   install what is missing, build into build-arm64/
#                                    (build-arm64/apps/pola is the aarch64 CLI)
#   scripts/cross_arm64.sh run ARGS  run that CLI under qemu
#   scripts/cross_arm64.sh test      ctest -L arm64 in build-arm64 (tests run under qemu)
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
DEBS=(libdnnl2 libdnnl-dev libzip4 libzip-dev zipcmp zipmerge ziptool zlib1g zlib1g-dev libbz2-1.0 libssl3)
LIBDIRS="$ROOT/usr/lib/aarch64-linux-gnu:$ROOT/lib/aarch64-linux-gnu"

install_missing() {
  local need_update=0 pkgs=()
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    need_update=1
  fi
  command -v aarch64-linux-gnu-g++ >/dev/null || pkgs+=(crossbuild-essential-arm64)
  command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
  if [ ! -f "$ROOT/.complete" ] || [ ${#pkgs[@]} -gt 0 ]; then
    [ $need_update = 1 ] || [ -z "$(ls /var/lib/apt/lists/*arm64_Packages 2>/dev/null)" ] && need_update=1
  fi
  [ $need_update = 1 ] && $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  [ ${#pkgs[@]} -gt 0 ] && $SUDO "${APT[@]}" install "${pkgs[@]}"
  if [ ! -f "$ROOT/.complete" ]; then
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
    $SUDO touch "$ROOT/.complete"
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
}

run() {
  exec env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH="$LIBDIRS" \
    qemu-aarch64-static "$BUILD/apps/pola" "$@"
}

case "${1:-build}" in
build) build ;;
run) shift; run "$@" ;;
test) ctest --test-dir "$BUILD" -L arm64 --output-on-failure ;;
*) echo "usage: $0 [build|run ARGS...|test]" >&2; exit 2 ;;
esac
