#!/usr/bin/env bash
# Configures and builds the project (Release) into build/ (or $POLA_BUILD_DIR).
#   scripts/build.sh                 everything (tool, libraries, tests, benchmarks)
#   scripts/build.sh --target pola   only what the named targets need
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${POLA_BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" "$@"
