#!/usr/bin/env bash
# Installs the peers the engine is compared against (bench/peers/compare.py): PyTorch 1.13 with
# an optimized BLAS, the ONNX exporter, and ONNX Runtime 1.30 through its Node binding.
# Idempotent; run as root or with sudo available.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  # Without it libblas.so.3 is the reference BLAS and PyTorch runs ~15x slower than any user's.
  libopenblas0-openmp
  python3 python3-numpy python3-torch python3-onnx python3-matplotlib
  # ONNX Runtime's CPU library ships inside the npm package; Node runs it.
  nodejs npm
  # GNU time measures each peer process's peak RSS
  time
)

missing=()
for p in "${PACKAGES[@]}"; do
  # nodesource's nodejs bundles npm; don't ask Debian for an npm that would conflict with it.
  if [ "$p" = npm ] && command -v npm >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_peers: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The version is pinned in package.json / package-lock.json. --ignore-scripts: the package's
# install script downloads extras (GPU providers) and fails offline; the CPU library is in the tarball.
if [ ! -f node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1 ]; then
  npm ci --ignore-scripts --no-audit --no-fund
fi
node -e "console.log('install_peers: onnxruntime-node', require('./node_modules/onnxruntime-node').env.versions.node)"
echo "install_peers: libblas.so.3 -> $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
