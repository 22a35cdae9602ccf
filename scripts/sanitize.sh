#!/usr/bin/env bash
# The sanitizer job (issue #7), one line of scripts/test.sh:
#   1. AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer: the whole
#      project built with gcc in build-asan/; every C++ doctest suite, the fuzz
#      seed replays, the hostile-input CLI table and the fast Python tests that
#      drive the binaries (the exclusions are listed below, with reasons).
#   2. ThreadSanitizer (build-tsan/): four threads sharing one pola::Model, the C
#      API's concurrency test, the server's threads (reactor, workers, batchers)
#      under the serve tests, and the Python binding's threads test.
#   3. libFuzzer: every fuzz target for POLA_FUZZ_SECONDS (default 20) from its
#      seed corpus, clang build in build-fuzz/ (scripts/fuzz.sh).
# POLA_SANITIZE_STEPS=asan,tsan,fuzz selects steps (all three by default).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${POLA_JOBS:-2}"
STEPS=",${POLA_SANITIZE_STEPS:-asan,tsan,fuzz},"
CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1"
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1")

# Any sanitizer report fails the test that triggered it. max_allocation_size_mb:
# a request above 4 GB is a finding (hostile sizes must be refused before
# allocating), not something to attempt.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_init_order=1:max_allocation_size_mb=4096"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/tests/security/ubsan.supp"
export LSAN_OPTIONS="suppressions=$PWD/tests/security/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/security/tsan.supp"
# Every graph the sanitized suites run fills each tensor with NaN before its first
# writer and after its last planned reader (engine/graph.h): a node reading what
# its edges do not declare shows up as NaN in parity and the API tests.
export POLA_POISON_ARENA=1
# The time of each part, for whoever shortens this job next.
. scripts/stage_timer.sh

if [[ "$STEPS" == *,asan,* ]]; then
  echo "sanitize: AddressSanitizer + UBSan + LeakSanitizer build (build-asan)"
  # No benchmarks: no sanitized test runs them. No Python binding: its tests would load the
  # sanitized library into an unsanitized Python, which ASan refuses.
  cmake -S . -B build-asan "${CONFIG[@]}" -DPOLA_SANITIZE=address,undefined -DPOLA_BUILD_BENCH=OFF -DPOLA_BUILD_PYTHON=OFF >/dev/null
  cmake --build build-asan -j"$JOBS"
  stage_done "ASan build"
  # Not run under ASan: parity_all (slow), parity_configs and precision.bf16_logits_configs
  # (the large configs at a small size: their engine paths are parity_fast's and
  # bf16_logits_fast's, their time the PyTorch reference's), parity_pp_configs and
  # precision.bf16_logits_pp_configs (the same for PolaFormer++: parity_pp_fast and
  # precision.bf16_logits_pp run its engine paths here), parity_fast_own_gemm (parity_fast
  # again with the own fp32 GEMM, which test_gemm_f32 and cli.gemm_provider run here),
  # parity_driver_selftest and reference_selftest (no binary of ours), training.*
  # (PyTorch reference runs over thousands of images dominate; the engine paths
  # are those of parity_fast, which runs here with Swin and PVT at padded and
  # rectangular sizes),
  # api.installed_package and docs.usage (they compile consumers out of tree
  # without the sanitizer flags, which cannot link the sanitized library),
  # cli.class_names (it also loads the sanitized libpolaformer.so into an
  # unsanitized Python through ctypes, which ASan refuses; its CLI cases run
  # the same loader code that the C++ suites cover under ASan), serve.soak (it checks that
  # the server's RSS stays flat, which ASan's quarantine of freed memory defeats by design; the
  # other serve.* tests drive the same server under ASan), precision.bf16_fashion (10,000
  # images at bf16: 238 s under ASan, the longest test by far; the bf16 code it runs, the bf16
  # GEMMs, packing and to_bf16 conversions, runs under ASan in precision.bf16_logits_fast),
  # cli.memory_refusal (it runs `pola` under an RLIMIT_AS of 1 GiB, which an ASan binary cannot
  # start under: ASan reserves terabytes of shadow address space; the same refusals run under
  # ASan in api.memory_refusal), precision.int8_fashion (20,000 int8 images and a calibration run:
  # the int8 GEMMs, quantize nodes and calibration recorder it drives run under ASan in
  # precision.int8_logits_fast and precision.int8_cli), precision.int8_accuracy_drop (a few thousand
  # int8 and fp32 images per trial; its .npy refusal is the only part short enough, and the eval and
  # quantize paths it drives run under ASan in the tests above), reference_int8_selftest (no binary of ours).
  ctest --test-dir build-asan --output-on-failure -LE slow -j"$JOBS" \
        -E '^(parity_all$|parity_fast_own_gemm$|parity_configs$|precision\.bf16_logits_configs$|parity_pp_configs$|precision\.bf16_logits_pp_configs$|parity_driver_selftest$|training\.|reference_selftest$|api\.installed_package$|docs\.usage$|cli\.class_names$|serve\.soak$|precision\.bf16_fashion$|cli\.memory_refusal$|precision\.int8_fashion$|precision\.int8_accuracy_drop$|reference_int8_selftest$)'
  stage_done "ASan tests"
fi

if [[ "$STEPS" == *,tsan,* ]]; then
  # libgomp (ours and oneDNN's) is not built with TSan annotations: with more
  # than one OpenMP thread its barriers show up as false races. One OpenMP
  # thread per run keeps the check on what matters here, four caller threads
  # sharing one model (plan pool, weight cache, packed weights).
  echo "sanitize: ThreadSanitizer build (build-tsan), OMP_NUM_THREADS=1"
  cmake -S . -B build-tsan "${CONFIG[@]}" -DPOLA_SANITIZE=thread -DPOLA_BUILD_BENCH=OFF >/dev/null
  cmake --build build-tsan -j"$JOBS" --target test_concurrent_runs pola test_api_concurrency polaformer_python
  stage_done "TSan build"
  OMP_NUM_THREADS=1 build-tsan/tests/security/test_concurrent_runs
  # The C API's threads and the server's (the serve tests drive a TSan-built `pola serve`).
  OMP_NUM_THREADS=1 ctest --test-dir build-tsan --output-on-failure \
        -R '^(api\.fixture|api\.concurrency|serve\.concurrency|serve\.guards|serve\.hostile)$'
  # The Python binding's threads: the TSan runtime must be loaded before the
  # (uninstrumented) interpreter starts, so it is preloaded for this test alone.
  OMP_NUM_THREADS=1 LD_PRELOAD="$(gcc -print-file-name=libtsan.so)" \
        ctest --test-dir build-tsan --output-on-failure -R '^python\.threads$'
  stage_done "TSan tests"
fi

if [[ "$STEPS" == *,fuzz,* ]]; then
  echo "sanitize: libFuzzer, ${POLA_FUZZ_SECONDS:-20} s per target (build-fuzz)"
  scripts/fuzz.sh all "${POLA_FUZZ_SECONDS:-20}"
  stage_done "fuzz build and runs"
fi
echo "sanitize: all steps passed"
