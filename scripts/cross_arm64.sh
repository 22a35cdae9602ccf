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
#   scripts/cross_arm64.sh bundle DIR  a relocatable install for a board: DIR/bin/pola
#                                    (RPATH $ORIGIN/../lib), its HTTP plugin DIR/lib/libpola_http.so
#                                    and DIR/lib, the libraries both need beyond glibc; checked under qemu
#                                    with nothing but glibc as the system's libraries
#   (build-arm64/pola-qemu, written by build, runs the aarch64 CLI from any script.)
# What it installs: the arm64 dpkg architecture, crossbuild-essential-arm64,
# qemu-user-static and qemu-user (apt), and the arm64 libraries the engine links (oneDNN,
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
  # bench/arm64/count_instructions.py loads its counting plugin into this (plugin-capable) build.
  command -v qemu-aarch64 >/dev/null || pkgs+=(qemu-user)
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

# The libraries a board is assumed to have: glibc's (the loader among them).
is_glibc() { case "$1" in ld-linux-aarch64.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*) return 0 ;; esac; return 1; }

# Runs an aarch64 program under qemu with a root holding glibc alone: any
# other library it needs must come from its own RPATH. Its status is returned.
with_glibc_only() {
  local r f status=0
  r=$(mktemp -d)
  mkdir -p "$r/lib"
  for f in /usr/aarch64-linux-gnu/lib/*; do is_glibc "$(basename "$f")" && cp -L "$f" "$r/lib/"; done
  QEMU_LD_PREFIX="$r" qemu-aarch64-static "$@" || status=$?
  rm -rf "$r"
  return "$status"
}

find_arm64_lib() {
  local d
  for d in "$ROOT/usr/lib/aarch64-linux-gnu" "$ROOT/lib/aarch64-linux-gnu" /usr/aarch64-linux-gnu/lib; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}

bundle() {
  local dest=$1
  [ -n "$dest" ] || { echo "usage: $0 bundle DIR" >&2; exit 2; }
  [ -x "$BUILD/apps/pola" ] || { echo "cross_arm64.sh bundle: no $BUILD/apps/pola (run: $0 build)" >&2; exit 2; }
  cmake --install "$BUILD" --prefix "$dest" --component cli >/dev/null
  mkdir -p "$dest/lib"
  # Every library pola and its HTTP plugin need, transitively, except glibc's: copied beside them;
  # libzip too, which pola opens itself when it reads a PyTorch checkpoint (weights/zip_library.h).
  local zip path
  zip=$(sed -n 's/^POLA_LIBZIP_SONAME:INTERNAL=//p' "$BUILD/CMakeCache.txt")
  path=$(find_arm64_lib "$zip") || { echo "cross_arm64.sh bundle: $zip (opened by pola) not found" >&2; exit 1; }
  cp -L "$path" "$dest/lib/$zip"
  local todo=("$dest/bin/pola" "$dest/lib/libpola_http.so" "$dest/lib/$zip") seen=" $zip " f lib
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}
    todo=("${todo[@]:1}")
    for lib in $(aarch64-linux-gnu-readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      is_glibc "$lib" && continue
      case "$seen" in *" $lib "*) continue ;; esac
      seen="$seen$lib "
      path=$(find_arm64_lib "$lib") || { echo "cross_arm64.sh bundle: $lib (needed by $f) not found" >&2; exit 1; }
      cp -L "$path" "$dest/lib/$lib"
      todo+=("$dest/lib/$lib")
    done
  done
  # The check: a library missing from DIR/lib fails to load. `serve` of a model that does not
  # exist loads the plugin first, then refuses the model by name.
  with_glibc_only "$dest/bin/pola" --version >/dev/null ||
    { echo "cross_arm64.sh bundle: $dest/bin/pola does not start with glibc alone" >&2; exit 1; }
  local refusal
  refusal=$(with_glibc_only "$dest/bin/pola" serve -m m="$dest/no-such-model.pola" 2>&1) || true
  case "$refusal" in
  *no-such-model.pola*) ;;
  *) echo "cross_arm64.sh bundle: the HTTP plugin does not load with glibc alone: $refusal" >&2; exit 1 ;;
  esac
  # And libzip: converting a zip archive reads its entry before refusing its content by name.
  /usr/bin/python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "w").writestr("junk/data.pkl", b"junk")' \
    "$dest/junk.pth"
  refusal=$(with_glibc_only "$dest/bin/pola" convert "$dest/junk.pth" -o "$dest/junk.pola" 2>&1) || true
  rm -f "$dest/junk.pth" "$dest/junk.pola"
  case "$refusal" in
  *junk/data.pkl*) ;;
  *) echo "cross_arm64.sh bundle: libzip does not load with glibc alone: $refusal" >&2; exit 1 ;;
  esac
  echo "bundle: $dest/bin/pola and $(ls "$dest/lib" | wc -l) libraries in $dest/lib ($(du -sh "$dest" | cut -f1))"
}

check() {
  local x86="${POLA_BUILD_DIR:-build}/apps/pola"
  [ -x "$x86" ] || { echo "cross_arm64.sh check: no x86-64 $x86 to compare with (scripts/build.sh)" >&2; exit 2; }
  ctest --test-dir "$BUILD" -L arm64 --output-on-failure ${POLA_ARM64_CTEST_EXCLUDE:+-E "$POLA_ARM64_CTEST_EXCLUDE"}
  /usr/bin/python3 tests/arm64/check_arm64.py --x86 "$x86" --arm64 "$BUILD/pola-qemu" --workdir "$BUILD/check"
  /usr/bin/python3 tests/parity/parity.py --pola "$BUILD/pola-qemu" --suite fast --threads 2 \
    --workdir "$BUILD/parity_fast" ${POLA_ARM64_PARITY_ONLY:+--only "$POLA_ARM64_PARITY_ONLY"}
  # The relocatable install: made in one folder, moved to another, started with glibc alone each time.
  rm -rf "$BUILD/bundle-check" "$BUILD/bundle-moved"
  bundle "$BUILD/bundle-check"
  mv "$BUILD/bundle-check" "$BUILD/bundle-moved"
  with_glibc_only "$BUILD/bundle-moved/bin/pola" classify -m models/fashion_pola_pvt.pola models/samples/*.png \
    --top 1 >/dev/null || { echo "cross_arm64.sh check: the moved bundle does not classify" >&2; exit 1; }
  echo "check: the bundle classifies after a move, with glibc alone beside it"
}

case "${1:-build}" in
build) build ;;
run) shift; exec "$BUILD/pola-qemu" "$@" ;;
bundle) bundle "${2:-}" ;;
test) ctest --test-dir "$BUILD" -L arm64 --output-on-failure ;;
check) check ;;
*) echo "usage: $0 [build|run ARGS...|test|check|bundle DIR]" >&2; exit 2 ;;
esac
