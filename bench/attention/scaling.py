#!/usr/bin/python3
"""Scaling study of the polarity attention core: N = 1k .. 1M tokens.

Compares, in one run and at the same thread count:
  * our kernel (`pola bench-attention`, or the standalone pola_bench_attention
    binary) for every ISA this machine has (avx512, avx2, scalar);
  * the PolaFormer reference formula written in PyTorch (SPEC section 3,
    exactly as the released model code computes it: phi maps materialised,
    q_sim / q_opp concatenated, KV = (phi_k^T n^-1/2) @ (v n^-1/2));
  * plain softmax attention in PyTorch (all heads at once, N x N scores),
    where its memory estimate fits.

Every PyTorch measurement runs in its own subprocess, so its peak RSS
(getrusage ru_maxrss, which includes the ~0.3 GB PyTorch runtime) belongs to
that measurement alone. Sizes whose memory estimate exceeds the budget are
skipped and marked as such in the table.

Writes results.csv, results.md and scaling.png to --out-dir.
Runs under Debian's /usr/bin/python3 (python3-torch, python3-matplotlib).
"""
import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time

GIB = 1024.0 ** 3


# --------------------------------------------------------------------------
# PyTorch workers (run in a subprocess: `scaling.py --worker ...`)
# --------------------------------------------------------------------------
def torch_worker(kind, n, heads, d, threads, runs):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    c = heads * d
    q = torch.rand(1, n, c) * 2 - 1
    k = torch.rand(1, n, c) * 2 - 1
    v = torch.rand(1, n, c) * 2 - 1
    # The parameters as the model holds them (SPEC 3.3): p = 1 + 4 sigmoid(power).
    power_param = torch.randn(1, heads, 1, d)
    scale_param = torch.randn(1, 1, c)

    def heads_first(x):  # (1, n, c) -> (1, h, n, d)
        return x.reshape(1, n, heads, d).permute(0, 2, 1, 3)

    def pola_reference():
        # SPEC section 3 steps 3-7, as the released code writes it.
        p = 1 + 4 * torch.sigmoid(power_param)
        s = torch.nn.functional.softplus(scale_param)
        qh = heads_first(q / s)
        kh = heads_first(k / s)  # pos_enc omitted, as in our benchmark
        vh = heads_first(v)
        q_pos = torch.relu(qh) ** p
        q_neg = torch.relu(-qh) ** p
        k_pos = torch.relu(kh) ** p
        k_neg = torch.relu(-kh) ** p
        q_sim = torch.cat([q_pos, q_neg], dim=-1)
        q_opp = torch.cat([q_neg, q_pos], dim=-1)
        kk = torch.cat([k_pos, k_neg], dim=-1)
        v1, v2 = torch.chunk(vh, 2, dim=-1)
        nk = kk.shape[-2]
        kmean = kk.mean(dim=-2, keepdim=True)
        z = 1 / (q_sim @ kmean.transpose(-2, -1) + 1e-6)
        kv = (kk.transpose(-2, -1) * nk ** -0.5) @ (v1 * nk ** -0.5)
        x_sim = q_sim @ kv * z
        z = 1 / (q_opp @ kmean.transpose(-2, -1) + 1e-6)
        kv = (kk.transpose(-2, -1) * nk ** -0.5) @ (v2 * nk ** -0.5)
        x_opp = q_opp @ kv * z
        return torch.cat([x_sim, x_opp], dim=-1).transpose(1, 2).reshape(1, n, c)

    def softmax_attention():
        qh, kh, vh = heads_first(q), heads_first(k), heads_first(v)
        attn = (qh * d ** -0.5) @ kh.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        return (attn @ vh).transpose(1, 2).reshape(1, n, c)

    fn = pola_reference if kind == "torch_ref" else softmax_attention
    with torch.no_grad():
        fn()  # warm-up
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times),
                      "peak_rss_mb": rss_mb, "torch": torch.__version__}))


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------
def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def qkvo_bytes(n, heads, d):
    return 4 * n * heads * d * 4


def estimate_bytes(kind, n, heads, d):
    """Peak memory estimates used to skip sizes (conservative)."""
    x = n * heads * d * 4  # one (n, C) fp32 tensor
    if kind == "ours":
        return 4 * x + 64 * 2 ** 20
    if kind == "torch_ref":
        # q, k, v, q/s, k/s, pos/neg maps (4x), q_sim, q_opp, k cat (2x each),
        # outputs and the final concat: ~20 tensors of size x at the peak.
        return 20 * x + 2 ** 30
    if kind == "torch_softmax":
        # Scores and their softmax (h, n, n), plus q, k, v, output.
        return 2 * heads * n * n * 4 + 6 * x + 2 ** 30
    raise ValueError(kind)


def run_ours(binary, n, heads, d, threads, isa, runs, warmup):
    cmd = [binary, "bench-attention", "--tokens", str(n), "--heads", str(heads), "--head-dim", str(d),
           "--threads", str(threads), "--isa", isa, "--runs", str(runs), "--warmup", str(warmup), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_torch(kind, n, heads, d, threads, runs):
    cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--worker", kind, str(n), str(heads), str(d),
           str(threads), str(runs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def supported_isas(binary):
    isas = []
    for isa in ("avx512", "avx2", "scalar"):
        r = subprocess.run([binary, "bench-attention", "--tokens", "1", "--isa", isa, "--runs", "1", "--json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            isas.append(isa)
        else:
            print(f"[scaling] skipping isa {isa}: {r.stderr.strip()}", flush=True)
    return isas


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, n, heads, d, threads, runs = sys.argv[2], *map(int, sys.argv[3:8])
        torch_worker(kind, n, heads, d, threads, runs)
        return

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=None,
                    help="pola or pola_bench_attention (default: build-kernels/bench/attention/pola_bench_attention)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sizes", default="1024,4096,16384,65536,262144,1048576")
    ap.add_argument("--configs", default="8x64,16x64", help="heads x head_dim, comma separated")
    ap.add_argument("--budget-gb", type=float, default=20.0,
                    help="skip a measurement whose memory estimate exceeds this (also capped at 80%% of MemAvailable)")
    ap.add_argument("--ours-budget-gb", type=float, default=10.0,
                    help="memory cap for our kernel's runs (q, k, v, out); the machine is shared")
    ap.add_argument("--scalar-max-n", type=int, default=1048576, help="largest N for the scalar kernel")
    ap.add_argument("--out-dir", default=os.path.join(here, "results"))
    args = ap.parse_args()

    binary = args.binary or os.path.join(root, "build-kernels", "bench", "attention", "pola_bench_attention")
    os.makedirs(args.out_dir, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    isas = supported_isas(binary)
    budget = min(args.budget_gb * GIB, 0.8 * mem_available_bytes())
    print(f"[scaling] binary={binary} threads={args.threads} isas={isas} budget={budget / GIB:.1f} GiB", flush=True)

    rows = []
    for heads, d in configs:
        for n in sizes:
            impls = [("ours", isa) for isa in isas] + [("torch_ref", "-"), ("torch_softmax", "-")]
            for kind, isa in impls:
                est = estimate_bytes("ours" if kind == "ours" else kind, n, heads, d)
                row = {"impl": kind if kind != "ours" else f"ours_{isa}", "heads": heads, "head_dim": d,
                       "tokens": n, "threads": args.threads, "median_ms": "", "min_ms": "",
                       "peak_rss_mb": "", "qkvo_mb": qkvo_bytes(n, heads, d) / 2 ** 20,
                       "est_gb": est / GIB, "status": "ok"}
                cap = min(budget, args.ours_budget_gb * GIB) if kind == "ours" else budget
                if est > cap:
                    row["status"] = f"skipped: memory estimate {est / GIB:.1f} GiB > budget {cap / GIB:.1f} GiB"
                elif kind == "ours" and isa == "scalar" and n > args.scalar_max_n:
                    row["status"] = f"skipped: scalar above N={args.scalar_max_n}"
                else:
                    big = n >= 262144
                    try:
                        if kind == "ours":
                            slow = isa == "scalar" and big
                            r = run_ours(binary, n, heads, d, args.threads, isa,
                                         runs=1 if slow else (3 if big else 5), warmup=0 if slow else 1)
                            row["cpu_ms_per_run"] = r.get("cpu_ms_per_run", "")
                        else:
                            r = run_torch(kind, n, heads, d, args.threads, runs=1 if big else 3)
                        row.update(median_ms=r["median_ms"], min_ms=r["min_ms"], peak_rss_mb=r["peak_rss_mb"])
                    except subprocess.CalledProcessError as e:
                        row["status"] = f"failed: {e.stderr.strip()[-200:] if e.stderr else e}"
                rows.append(row)
                print(f"[scaling] {row['impl']:14s} h={heads:2d} d={d} N={n:8d}: "
                      f"{row['median_ms'] if row['median_ms'] == '' else round(row['median_ms'], 2)} ms, "
                      f"rss {row['peak_rss_mb'] if row['peak_rss_mb'] == '' else round(row['peak_rss_mb'])} MB "
                      f"[{row['status']}]", flush=True)

    write_outputs(rows, args, binary)


def write_outputs(rows, args, binary):
    fields = ["impl", "heads", "head_dim", "tokens", "threads", "median_ms", "min_ms", "cpu_ms_per_run",
              "peak_rss_mb", "qkvo_mb", "est_gb", "status"]
    with open(os.path.join(args.out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)

    def find(impl, h, d, n):
        for r in rows:
            if r["impl"] == impl and r["heads"] == h and r["head_dim"] == d and r["tokens"] == n:
                return r
        return None

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    load = os.getloadavg()
    lines = [
        "# Polarity attention scaling study",
        "",
        f"Commit {commit}; {args.threads} threads for every implementation; binary `{os.path.basename(binary)}`; "
        f"load average at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} CPUs "
        "(a shared machine: wall times include time lost to other jobs).",
        "Times are medians of 5 runs (3 for N >= 262144, 1 for scalar and PyTorch at N >= 262144). "
        "Peak RSS is the whole process (getrusage); PyTorch's includes its ~0.3 GB runtime. "
        "`ratio` = peak RSS / bytes of q, k, v and output. Our kernel's q, k, v and output are "
        "2 MB-aligned huge-page arrays (bench-attention's default, as `pola_alloc_floats` gives); "
        "PyTorch allocates its own tensors.",
        "",
        "| impl | heads | d | N | median ms | peak RSS MB | RSS / qkvo | speed-up of ours_best | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = r["median_ms"]
        rss = r["peak_rss_mb"]
        best = None
        for impl in ("ours_avx512", "ours_avx2", "ours_scalar"):
            b = find(impl, r["heads"], r["head_dim"], r["tokens"])
            if b and b["median_ms"] != "":
                best = b
                break
        sp = f"{ms / best['median_ms']:.1f}x" if best and ms != "" and r is not best else ""
        ms_s = "" if ms == "" else f"{ms:.2f}"
        rss_s = "" if rss == "" else f"{rss:.0f}"
        ratio_s = "" if rss == "" else f"{rss / r['qkvo_mb']:.2f}"
        lines.append(f"| {r['impl']} | {r['heads']} | {r['head_dim']} | {r['tokens']} | {ms_s} | {rss_s} | "
                     f"{ratio_s} | {sp} | {r['status']} |")
    with open(os.path.join(args.out_dir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows, args.out_dir)
    print(f"[scaling] wrote {args.out_dir}/results.csv, results.md, scaling.png", flush=True)


def plot(rows, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(13, 5))
    configs = sorted({(r["heads"], r["head_dim"]) for r in rows})
    impls = sorted({r["impl"] for r in rows})
    styles = ["-", "--", ":", "-."]
    for ci, (h, d) in enumerate(configs):
        for impl in impls:
            pts = [(r["tokens"], r["median_ms"], r["peak_rss_mb"]) for r in rows
                   if r["impl"] == impl and r["heads"] == h and r["head_dim"] == d and r["median_ms"] != ""]
            if not pts:
                continue
            n, t, m = zip(*pts)
            label = f"{impl} h={h} d={d}"
            ax_t.plot(n, t, styles[ci % len(styles)], marker="o", label=label)
            ax_m.plot(n, m, styles[ci % len(styles)], marker="o", label=label)
    for ax, title, unit in ((ax_t, "time per call", "ms"), (ax_m, "peak RSS", "MB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens N")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "scaling.png"), dpi=110)


if __name__ == "__main__":
    main()
