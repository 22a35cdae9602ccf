#!/usr/bin/env bash
# Runs every test: builds the project, then the whole ctest suite except the
# tests labelled `slow` (POLA_TEST_SLOW=1 runs those too), then the aarch64
# cross-build under qemu, then the sanitizer and fuzzing job (scripts/sanitize.sh).
# Prints the time of each stage.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${POLA_JOBS:-$(nproc)}"
. scripts/stage_timer.sh
scripts/build.sh
stage_done "release build"
LABEL_ARGS=(-LE slow)
[ "${POLA_TEST_SLOW:-0}" = "1" ] && LABEL_ARGS=()
# Tests run two at a time. None measures speed; a few check the server's own
# timeouts and waits (serve.model_batcher: a request held for company for at
# least its 20 s max-wait is still waiting after 0.3 s; serve.guards and
# serve.hostile: answers within 2x --timeout), margins that a loaded machine
# keeps.
ctest --test-dir "${POLA_BUILD_DIR:-build}" --output-on-failure -j"$JOBS" "${LABEL_ARGS[@]}"
stage_done "test suite (ctest)"
# The aarch64 build under qemu-user (scripts/cross_arm64.sh): cross-built, its kernels on
# NEON against the scalar references and its CPU detection, its CLI against the x86-64 one
# (tests/arm64/check_arm64.py), and the part of the fast parity set that is quick under
# emulation: the reduced configs, the stress cases and pvt_tiny through the converter (the
# whole set, and kernels.scalar: scripts/cross_arm64.sh check). POLA_SKIP_ARM64=1 leaves it out.
if [ "${POLA_SKIP_ARM64:-0}" != 1 ]; then
  POLA_ARM64_TARGETS="pola test_kernels test_kernels_arm64_detection" scripts/cross_arm64.sh build
  POLA_ARM64_CTEST_EXCLUDE='^kernels\.scalar$' POLA_ARM64_PARITY_ONLY=reduced,stress,pola_pvt_tiny_b1_via_safetensors \
    scripts/cross_arm64.sh check
  stage_done "arm64 cross-build and qemu checks"
fi
# The sanitizer job (issue #7): the suite under ASan + UBSan + LeakSanitizer,
# ThreadSanitizer on the concurrency test, and a short libFuzzer run of every
# fuzz target. POLA_SKIP_SANITIZERS=1 leaves it out (a quick local run).
if [ "${POLA_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/sanitize.sh
  stage_done "sanitizers and fuzzing"
fi
