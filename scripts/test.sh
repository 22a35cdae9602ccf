#!/usr/bin/env bash
# Runs every test: builds the project, then the whole ctest suite except the
# tests labelled `slow` (POLA_TEST_SLOW=1 runs those too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
LABEL_ARGS=(-LE slow)
[ "${POLA_TEST_SLOW:-0}" = "1" ] && LABEL_ARGS=()
ctest --test-dir "${POLA_BUILD_DIR:-build}" --output-on-failure "${LABEL_ARGS[@]}"
# The sanitizer job (scripts/sanitize.sh: ASan+UBSan+LSan suite, TSan, short
# fuzzing) joins this command once a clean-clone run of it has been seen green;
# until then it is opt-in: POLA_RUN_SANITIZERS=1 scripts/test.sh.
[ "${POLA_RUN_SANITIZERS:-0}" = 1 ] && scripts/sanitize.sh
exit 0
