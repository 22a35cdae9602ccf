#!/bin/bash
# Own fp32 GEMM against oneDNN's, end to end: `pola bench` runs alternating
# POLA_GEMM_F32=own and =onednn, one JSON median per run, then the medians,
# minima and their ratios.
#   bench/gemm_f32/alternate.sh POLA MODEL [ROUNDS=5] [THREADS=2] [RUNS=20]
# Extra environment (OMP_WAIT_POLICY=passive on shared cores) passes through.
set -euo pipefail
pola=$1 model=$2 rounds=${3:-5} threads=${4:-2} runs=${5:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq 1 "$rounds"); do
  for p in own onednn; do
    POLA_GEMM_F32=$p "$pola" bench -m "$model" --runs "$runs" --warmup 3 --threads "$threads" --peak-gflops 1 \
      --json --precision fp32 |
      /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print('$p', j['gemm_f32'], j['median_ms'])" >>"$out"
  done
done
/usr/bin/python3 - "$out" <<'PY'
import statistics, sys
d = {"own": [], "onednn": []}
for line in open(sys.argv[1]):
    p, provider, ms = line.split()
    d[p].append(float(ms))
for p, v in d.items():
    print(f"{p:7s} medians (ms): " + " ".join(f"{x:.2f}" for x in v))
o, n = statistics.median(d["own"]), statistics.median(d["onednn"])
print(f"median of medians: own {o:.2f} ms, onednn {n:.2f} ms, own/onednn {o / n:.3f}")
print(f"minimum:           own {min(d['own']):.2f} ms, onednn {min(d['onednn']):.2f} ms, "
      f"own/onednn {min(d['own']) / min(d['onednn']):.3f}")
PY
