#!/bin/sh
# Alternating rounds of the fp32 and bf16 attention cores at 1M x 8 x 64 on 2
# threads (and 65k on 1 thread), one JSON object per run appended to OUT (each
# names the CPU, its ISA table, the precision and, for bf16, which
# instructions did the products and its error against the fp32 core), plus
# the load average before each run. A run that fails (no bf16 core on this
# CPU, a crash) writes nothing to OUT: its message goes to stderr and the
# script exits non-zero at the end. Re-run in a quiet window to replace
# figures taken under load:
#   bench/attention/bf16_rounds.sh BUILD/bench/attention/pola_bench_attention OUT.jsonl [ROUNDS]
set -eu
bin=$1 out=$2 rounds=${3:-3}
failed=0
i=0
while [ "$i" -lt "$rounds" ]; do
  for precision in fp32 bf16; do
    for shape in "1048576 2" "65536 1"; do
      set -- $shape
      load=$(cut -d' ' -f1-3 /proc/loadavg)
      # The whole line is written only after the run succeeded with one JSON object.
      if json=$("$bin" bench-attention --tokens "$1" --heads 8 --head-dim 64 --threads "$2" --runs 3 --passes \
        --precision "$precision" --json) && [ "${json#\{}" != "$json" ]; then
        printf '{"load_avg": "%s", %s\n' "$load" "${json#\{}" >> "$out"
      else
        echo "bf16_rounds.sh: $precision at $1 tokens, $2 threads failed; nothing written" >&2
        failed=1
      fi
    done
  done
  i=$((i + 1))
done
exit "$failed"
