#!/usr/bin/python3
"""High-resolution scaling study of backbone features.

For pola_pvt_tiny and pola_swin_t (random weights in the official layout), at square inputs of
224, 512, 1024, 2048 (and 4096 for PVT) pixels a side, on --threads threads:
  * the engine (`pola_features_bench`: every stage + the pooled embedding, no head), and
  * the PyTorch reference (float32, torch_features.py), where it fits in memory,
each size in its own process (peak RSS = that size's), in alternating rounds engine / PyTorch
so that load on a shared machine hits both alike. Reports the median latency, peak RSS, the
engine's GFLOP/s (analytic FLOPs, model/flops.h) and planned arena, the engine / PyTorch ratio,
and the fitted exponent of time and memory vs pixels between 512 and 2048 (least squares on
log-log; linear scaling = 1).

A size is skipped (marked in the table) when its predicted peak RSS, extrapolated linearly in
pixels from the previous size of the same engine, exceeds --mem-budget-gb (default: 70% of
MemAvailable), so a run never pushes a shared machine into the OOM killer.

Writes results.csv, results.md (with CPU model, ISA flags, threads, commit) and scaling.png
(log-log latency and peak RSS vs pixels, with a slope-1 guide) to --out-dir.

  /usr/bin/python3 bench/scaling/run_scaling.py --build build [--sizes 224,512,1024,2048]
      [--pvt-extra 4096] [--threads 2] [--rounds 2] [--runs 3] [--no-torch] [--out-dir DIR]

Takes about an hour at the default sizes on 2 cores (PyTorch at 2048 dominates): run it in a
quiet window.
"""
import argparse
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "peers"))

MODELS = ["pola_pvt_tiny", "pola_swin_t"]
TIMEOUT_S = 4 * 3600


def mem_available_gb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024 ** 2
    return 8.0


def cpu_description():
    model, flags = platform.processor() or "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model in ("unknown", "x86_64", ""):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    return model, " ".join(isa)


def blas_library():
    """The BLAS PyTorch gets (PEERS.md: without OpenBLAS it is ~15x slower than a user's)."""
    path = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    return path + ("" if "openblas" in path else " (NOT OpenBLAS: PyTorch times are ~15x too slow; "
                   "install libopenblas0-openmp)")


def git_commit():
    r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def run_json(cmd):
    """One measurement process; None when it fails (its stderr is printed)."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    if r.returncode != 0:
        print(f"  failed ({r.returncode}): {' '.join(cmd)}\n  {r.stderr.strip()[-400:]}", flush=True)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def fitted_exponent(points):
    """Slope of log(y) vs log(x) by least squares; None with fewer than two points."""
    if len(points) < 2:
        return None
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def measure(args, arch, model_path, sizes):
    rows = []
    last_rss = {}  # engine -> (pixels, peak RSS MB) of the previous size measured
    budget_mb = args.mem_budget_gb * 1024
    for side in sizes:
        pixels = side * side
        row = {"model": arch, "side": side, "pixels": pixels}
        engines = ["pola"] + ([] if args.no_torch else ["pytorch"])
        samples = {e: [] for e in engines}
        for e in engines:
            if e in last_rss:
                prev_pixels, prev_rss = last_rss[e]
                predicted = prev_rss * pixels / prev_pixels
                if predicted > budget_mb:
                    row[f"{e}_skipped"] = f"predicted {predicted / 1024:.1f} GB > budget {args.mem_budget_gb:.1f} GB"
                    samples[e] = None
        for _ in range(args.rounds):
            for e in engines:
                if samples[e] is None:
                    continue
                size = f"{side}x{side}"
                if e == "pola":
                    cmd = [args.bench, "--model", model_path, "--size", size, "--threads", str(args.threads),
                           "--runs", str(args.runs), "--warmup", "1"]
                else:
                    cmd = ["/usr/bin/python3", os.path.join(HERE, "torch_features.py"), "--model", model_path,
                           "--size", size, "--threads", str(args.threads), "--runs", str(args.runs)]
                result = run_json(cmd)
                if result is None:
                    samples[e] = None
                    row[f"{e}_skipped"] = "failed"
                    continue
                samples[e].append(result)
        for e in engines:
            if not samples[e]:
                continue
            times = [t for s in samples[e] for t in s["times_ms"]]
            rss = max(s["peak_rss_mb"] for s in samples[e])
            row[f"{e}_ms"] = statistics.median(times)
            row[f"{e}_rss_mb"] = rss
            last_rss[e] = (pixels, rss)
            if e == "pola":
                row["gflop"] = samples[e][0]["gflop"]
                row["arena_mb"] = samples[e][0]["arena_mb"]
                row["pola_gflops"] = row["gflop"] / (row["pola_ms"] / 1e3)
        if "pola_ms" in row and "pytorch_ms" in row:
            row["pytorch_over_pola"] = row["pytorch_ms"] / row["pola_ms"]
        print("  " + json.dumps(row), flush=True)
        rows.append(row)
    return rows


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def write_outputs(args, rows, cpu, isa, under_load):
    os.makedirs(args.out_dir, exist_ok=True)
    keys = ["model", "side", "pixels", "pola_ms", "pola_rss_mb", "arena_mb", "gflop", "pola_gflops",
            "pytorch_ms", "pytorch_rss_mb", "pytorch_over_pola", "pola_skipped", "pytorch_skipped"]
    with open(os.path.join(args.out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in keys})
    lines = [
        "# Backbone features vs input size",
        "",
        f"CPU: {cpu} ({isa}); {args.threads} threads; commit {git_commit()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Command: `/usr/bin/python3 bench/scaling/run_scaling.py {' '.join(sys.argv[1:])}`",
        f"PyTorch's BLAS: {blas_library()}.",
        "Taken " + ("UNDER LOAD (other jobs on the machine): absolute times are noisy, ratios less so."
                    if under_load else "in a quiet window."),
        "",
        "Engine: `pola_features_bench` (every stage + pooled, no head), median of rounds x runs. PyTorch: the",
        "reference model in float32, same threads. Peak RSS per process (ru_maxrss; PyTorch's includes its",
        "~0.3 GB runtime).",
        "",
        "| model | size | engine ms | engine RSS MB | arena MB | GFLOP | engine GFLOP/s | PyTorch ms | PyTorch RSS MB | PyTorch / engine |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        torch_ms = r.get("pytorch_ms")
        lines.append(
            f"| {r['model']} | {r['side']}x{r['side']} | {fmt(r.get('pola_ms'), '.1f')} | "
            f"{fmt(r.get('pola_rss_mb'), '.0f')} | {fmt(r.get('arena_mb'), '.0f')} | {fmt(r.get('gflop'), '.1f')} | "
            f"{fmt(r.get('pola_gflops'), '.1f')} | "
            + (fmt(torch_ms, '.1f') if torch_ms else r.get("pytorch_skipped", "-")) +
            f" | {fmt(r.get('pytorch_rss_mb'), '.0f')} | {fmt(r.get('pytorch_over_pola'), '.2f')} |")
    lines += ["", "Fitted exponents (log-log least squares over the sizes 512..2048; 1 = linear in pixels):", ""]
    for arch in sorted({r["model"] for r in rows}):
        for e, name in (("pola", "engine"), ("pytorch", "PyTorch")):
            pts = [(r["pixels"], r[f"{e}_ms"]) for r in rows
                   if r["model"] == arch and 512 <= r["side"] <= 2048 and f"{e}_ms" in r]
            mem = [(r["pixels"], r[f"{e}_rss_mb"]) for r in rows
                   if r["model"] == arch and 512 <= r["side"] <= 2048 and f"{e}_rss_mb" in r]
            t, m = fitted_exponent(pts), fitted_exponent(mem)
            if t is not None:
                lines.append(f"- {arch}, {name}: time ~ pixels^{t:.3f}, peak RSS ~ pixels^{m:.3f} "
                             f"({len(pts)} sizes)")
    with open(os.path.join(args.out_dir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(args, rows, cpu)


def plot(args, rows, cpu):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, key, label in ((axes[0], "ms", "latency (ms)"), (axes[1], "rss_mb", "peak RSS (MB)")):
        anchor = None
        for arch in sorted({r["model"] for r in rows}):
            for e, style in (("pola", "-o"), ("pytorch", "--s")):
                pts = [(r["pixels"], r[f"{e}_{key}"]) for r in rows if r["model"] == arch and f"{e}_{key}" in r]
                if pts:
                    ax.plot(*zip(*pts), style, label=f"{arch} ({'engine' if e == 'pola' else 'PyTorch'})")
                    anchor = anchor or pts[0]
        if anchor:
            xs = sorted({r["pixels"] for r in rows})
            ax.plot(xs, [anchor[1] * x / anchor[0] for x in xs], ":", color="gray", label="slope 1 (linear)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("input pixels (H x W)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Backbone features vs input size, {args.threads} threads, {cpu}", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out_dir, "scaling.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="CMake build dir (pola_features_bench)")
    ap.add_argument("--sizes", default="224,512,1024,2048")
    ap.add_argument("--pvt-extra", default="4096", help="extra sizes for pola_pvt_tiny only ('' for none)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--mem-budget-gb", type=float, default=0.7 * mem_available_gb())
    ap.add_argument("--under-load", action="store_true", help="say in results.md that the machine was busy")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--cases-dir", default=os.path.join(tempfile.gettempdir(), "pola_scaling_cases"),
                    help="where the random-weight model files go (not the repository: ~160 MB)")
    args = ap.parse_args()
    args.bench = os.path.join(args.build, "bench", "scaling", "pola_features_bench")
    if not os.path.exists(args.bench):
        sys.exit(f"{args.bench} not found: cmake --build {args.build} --target pola_features_bench")
    from peer_models import make_case
    cpu, isa = cpu_description()
    print(f"CPU {cpu} ({isa}), {args.threads} threads, memory budget {args.mem_budget_gb:.1f} GB", flush=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = []
    for k, arch in enumerate(args.models.split(",")):
        case_dir = os.path.join(args.cases_dir, arch)
        make_case(arch, 1000 + k, case_dir)
        extra = [int(s) for s in args.pvt_extra.split(",") if s] if "pvt" in arch else []
        print(f"{arch}:", flush=True)
        rows += measure(args, arch, os.path.join(case_dir, "model.pola"), sizes + extra)
    write_outputs(args, rows, cpu, isa, args.under_load)
    print(f"wrote {args.out_dir}/results.md, results.csv, scaling.png")


if __name__ == "__main__":
    main()
