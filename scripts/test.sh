#!/usr/bin/env bash
# Runs every test: builds the project, then the whole ctest suite except the
# tests labelled `slow` (POLA_TEST_SLOW=1 runs those too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
LABEL_ARGS=(-LE slow)
[ "${POLA_TEST_SLOW:-0}" = "1" ] && LABEL_ARGS=()
ctest --test-dir "${POLA_BUILD_DIR:-build}" --output-on-failure "${LABEL_ARGS[@]}"
[ "${POLA_SKIP_SANITIZE:-0}" = 1 ] || scripts/sanitize.sh  # ASan+UBSan+LSan suite, TSan, fuzzing (issue #7)
