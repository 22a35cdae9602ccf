#!/usr/bin/env bash
# Runs every test: builds the project, then the whole ctest suite except the
# tests labelled `slow` (POLA_TEST_SLOW=1 runs those too), then the sanitizer
# and fuzzing job (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
LABEL_ARGS=(-LE slow)
[ "${POLA_TEST_SLOW:-0}" = "1" ] && LABEL_ARGS=()
ctest --test-dir "${POLA_BUILD_DIR:-build}" --output-on-failure "${LABEL_ARGS[@]}"
# The sanitizer job (issue #7): the suite under ASan + UBSan + LeakSanitizer,
# ThreadSanitizer on the concurrency test, and a short libFuzzer run of every
# fuzz target. POLA_SKIP_SANITIZERS=1 leaves it out (a quick local run).
[ "${POLA_SKIP_SANITIZERS:-0}" = 1 ] || scripts/sanitize.sh
