#!/usr/bin/env bash
# Installs every Debian package the project needs (build, tests, reference,
# benchmarks). Idempotent; run as root or with sudo available.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake git pkg-config
  libdnnl-dev libxsimd-dev libstb-dev doctest-dev nlohmann-json3-dev libcli11-dev
  # libzip-dev's CMake config names the zip tools, so find_package(libzip) needs them
  libzip-dev zipcmp zipmerge ziptool
  # model-file checksums (XXH3, used header-only; python3-xxhash for the reference writer)
  libxxhash-dev python3-xxhash
  # sanitizers and fuzzers
  clang libclang-rt-14-dev
  # clang's OpenMP runtime, for the libFuzzer build (scripts/fuzz.sh)
  libomp-14-dev
  # the PyTorch reference, fixtures and the preprocessing comparison (/usr/bin/python3)
  python3 python3-numpy python3-torch python3-torchvision python3-pil python3-skimage
  # real data for the trained default models
  dataset-fashion-mnist
  # `pola serve` (HTTP on cpp-httplib; its CMake config needs brotli, ssl and zlib headers, which it depends on)
  libcpp-httplib-dev
  # the README's server examples (run by docs.usage) use curl
  curl
  # the Python binding (pybind11's CMake config needs the Python headers, python3-dev) and its tests
  pybind11-dev python3-dev python3-pytest
  # scale-out on Dask (examples/dask_classify.py and its test)
  python3-distributed
)
# The aarch64 cross-build (scripts/test.sh's arm64 stage, bench/arm64): scripts/cross_arm64.sh
# installs what it needs itself (crossbuild-essential-arm64, qemu-user-static, qemu-user for the
# instruction-counting plugin, the arm64 oneDNN, libzip, cpp-httplib .debs and theirs unpacked into
# /opt/pola-arm64). The peers benchmarks: bench/peers/install_peers.sh.

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
