#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and classify
# the shipped Fashion-MNIST sample images with the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# Only the tool: the first run compiles what it needs (scripts/test.sh builds the rest).
scripts/build.sh --target pola
MODEL="${POLA_MODEL:-models/fashion_pola_pvt.pola}"
build/apps/pola info "$MODEL"
build/apps/pola classify --model "$MODEL" --top 3 models/samples/*.png
