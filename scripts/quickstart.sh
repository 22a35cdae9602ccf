#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and classify
# the shipped Fashion-MNIST sample images with the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
MODEL="${POLA_MODEL:-models/fashion_pola_pvt.pola}"
build/apps/pola info "$MODEL"
build/apps/pola classify --model "$MODEL" --top 3 models/samples/*.png
