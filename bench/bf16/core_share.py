#!/usr/bin/env python3
"""Where a bf16 run's time goes, and what the bf16/fp32 ratio would be with the polarity
attention core (fp32 in both runs) at a fraction of its time.

Runs `pola bench --profile --json --precision bf16` (which profiles the same model at fp32 in the
same process) ROUNDS times and prints, per round and as medians over rounds: the latency ratio
bf16/fp32 from the two profiles (sums of per-node medians), the share of the bf16 time spent in
the polarity core (`*.attn.core` nodes of blocks with a depthwise branch: Swin's softmax window
attention is counted apart), the `.to_bf16` conversions and the other non-GEMM nodes, and the
ratio with the polarity core at --core-factor of its fp32 time (default 0.5).

  /usr/bin/python3 bench/bf16/core_share.py --pola build/apps/pola --model M.pola [--rounds 5]

Quote the CPU line and the load average it prints: on 2 shared cores, anything above ~2.5 inflates
every figure (the ratios less so, since both columns come from the same process).
"""
import argparse
import json
import os
import statistics
import subprocess


def profile(pola, model, threads, runs, batch):
    out = subprocess.run([pola, "bench", "--model", model, "--threads", str(threads), "--runs", str(runs),
                          "--batch", str(batch), "--precision", "bf16", "--profile", "--json",
                          "--peak-gflops", "1"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def split(nodes):
    """Total ms and the ms of: polarity core, softmax window attention, to_bf16, GEMMs (bf16 nodes)."""
    names = {n["node"] for n in nodes}
    parts = {"total": 0.0, "polarity_core": 0.0, "softmax_core": 0.0, "to_bf16": 0.0, "gemm": 0.0}
    for n in nodes:
        name, ms = n["node"], n["ms"]
        parts["total"] += ms
        if name.endswith(".attn.core"):
            block = name[: -len(".core")]
            parts["polarity_core" if block + ".dwc" in names else "softmax_core"] += ms
        elif name.endswith(".to_bf16"):
            parts["to_bf16"] += ms
        elif n["precision"] == "bf16" and not name.endswith((".norm1", ".norm2", ".norm", ".gate", ".patchify",
                                                               ".partition")):
            parts["gemm"] += ms
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--core-factor", type=float, default=0.5, help="polarity core time as a fraction of fp32's")
    a = ap.parse_args()
    rows = []
    for r in range(a.rounds):
        d = profile(a.pola, a.model, a.threads, a.runs, a.batch)
        b, f = split(d["profile"]), split(d["profile_fp32"])
        est = (b["total"] - b["polarity_core"] + a.core_factor * f["polarity_core"]) / f["total"]
        row = {"ratio": b["total"] / f["total"], "ratio_core_scaled": est,
               "core_share_bf16": b["polarity_core"] / b["total"], "softmax_share_bf16": b["softmax_core"] / b["total"],
               "to_bf16_share": b["to_bf16"] / b["total"], "gemm_share_bf16": b["gemm"] / b["total"],
               "bf16_ms": b["total"], "fp32_ms": f["total"], "load": os.getloadavg()[0]}
        rows.append(row)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    print(f"cpu: {d['cpu']}; bf16 instructions: {d.get('bf16_isa')}; commit {d.get('commit')}; "
          f"model {d.get('arch')} batch {a.batch}, {a.threads} threads")
    print("medians: " + ", ".join(f"{k} {statistics.median(r[k] for r in rows):.3f}" for k in rows[0]))
    print(f"(ratio_core_scaled: bf16/fp32 with the polarity core at {a.core_factor} of its fp32 time)")


if __name__ == "__main__":
    main()
