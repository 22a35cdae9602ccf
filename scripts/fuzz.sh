#!/usr/bin/env bash
# Fuzzes one target (or `all`, one after the other) for SECONDS each with
# libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer:
#   scripts/fuzz.sh TARGET|all SECONDS [extra libFuzzer flags]
# Targets: model_file checkpoint torch_pickle npy image (tests/fuzz/fuzz_<target>.cpp).
# Builds them with clang into build-fuzz/ (or $POLA_FUZZ_BUILD_DIR). The working
# corpus grows in <build>/corpus/<target>, seeded from tests/fuzz/corpus/<target>;
# a crash leaves its input in <build>/artifacts/<target>/ and fails the script.
# To keep a crash as a regression test, copy that input to tests/fuzz/regressions/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(model_file checkpoint torch_pickle npy image)
if [ $# -lt 2 ]; then
  echo "usage: $0 TARGET|all SECONDS [libFuzzer flags]; targets: ${TARGETS[*]}" >&2
  exit 2
fi
WHAT="$1"
SECONDS_EACH="$2"
shift 2
BUILD_DIR="${POLA_FUZZ_BUILD_DIR:-build-fuzz}"
CXX_FUZZ="${POLA_FUZZ_CXX:-clang++-14}"
CC_FUZZ="${POLA_FUZZ_CC:-clang-14}"

if [ "$WHAT" = all ]; then
  selected=("${TARGETS[@]}")
else
  selected=("$WHAT")
  [[ " ${TARGETS[*]} " == *" $WHAT "* ]] || { echo "fuzz.sh: unknown target '$WHAT' (${TARGETS[*]})" >&2; exit 2; }
fi

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CC="$CC_FUZZ" CXX="$CXX_FUZZ" cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1" \
    -DPOLA_SANITIZE=address,undefined -DPOLA_FUZZ=ON -DPOLA_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" -j"${POLA_JOBS:-2}" --target "${selected[@]/#/fuzz_}"

# LeakSanitizer on; UBSan findings are fatal (libFuzzer then saves the input).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export OMP_NUM_THREADS=1

for t in "${selected[@]}"; do
  corpus="$BUILD_DIR/corpus/$t"
  artifacts="$BUILD_DIR/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz.sh: $t for ${SECONDS_EACH}s (corpus $corpus, seeds tests/fuzz/corpus/$t)"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes us allocate more is a finding.
  "$BUILD_DIR/tests/fuzz/fuzz_$t" "$corpus" "tests/fuzz/corpus/$t" \
    -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=3072 -malloc_limit_mb=2560 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 -close_fd_mask=1 "$@"
done
