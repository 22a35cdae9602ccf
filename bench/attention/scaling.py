#!/usr/bin/python3
"""Scaling study of the polarity attention core: N = 1k .. 1M tokens.

Compares, in one run and at the same thread count:
  * our kernel (`pola bench-attention`, or the standalone pola_bench_attention
    binary) for every ISA this machine has (avx512, avx2, scalar), and the
    bf16 core (`--precision bf16`, products on AMX tiles or AVX512-BF16 dot products) where it runs;
  * the PolaFormer reference formula written in PyTorch (SPEC section 3,
    exactly as the released model code computes it: phi maps materialised,
    q_sim / q_opp concatenated, KV = (phi_k^T n^-1/2) @ (v n^-1/2));
  * plain softmax attention in PyTorch (all heads at once, N x N scores),
    where its memory estimate fits.

Every PyTorch measurement runs in its own subprocess, so its peak RSS
(getrusage ru_maxrss, which includes the ~0.3 GB PyTorch runtime) belongs to
that measurement alone. Sizes whose memory estimate exceeds the budget are
skipped and marked as such in the table.

Writes <cpu>-<date>.csv and .md to --out-dir (one pair per machine and day:
every row names the CPU, its ISA table and the precision), then draws
scaling.png from every such CSV there, one series per CPU, implementation
and precision, so machines compare on one plot.
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


def run_ours(binary, n, heads, d, threads, isa, runs, warmup, precision="fp32"):
    cmd = [binary, "bench-attention", "--tokens", str(n), "--heads", str(heads), "--head-dim", str(d),
           "--threads", str(threads), "--isa", isa, "--runs", str(runs), "--warmup", str(warmup), "--json",
           "--precision", precision]
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


def bf16_core_runs(binary):
    """Whether this machine runs the bf16 core (AMX-BF16); says why not otherwise."""
    r = subprocess.run([binary, "bench-attention", "--tokens", "1", "--runs", "1", "--json", "--precision", "bf16"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"[scaling] skipping the bf16 core: {r.stderr.strip()}", flush=True)
    return r.returncode == 0


def machine(binary):
    """The CPU as bench-attention reports it: model, cores, ISA table."""
    r = subprocess.run([binary, "bench-attention", "--tokens", "1", "--runs", "1", "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["cpu"]


def cpu_label(cpu):
    """A short series name: the model, plus AMX where the CPU has it (Intel's VMs say only 'Xeon')."""
    name = cpu["model"].replace("(R)", "").replace("(TM)", "").replace(" Processor", "").replace(" CPU", "")
    name = " ".join(name.split())
    return name + (" (AMX)" if "amx_bf16" in cpu["isa"].split() else "")


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
    cpu = machine(binary)
    label = cpu_label(cpu)
    bf16 = "avx512" in isas and bf16_core_runs(binary)
    budget = min(args.budget_gb * GIB, 0.8 * mem_available_bytes())
    print(f"[scaling] binary={binary} threads={args.threads} isas={isas} budget={budget / GIB:.1f} GiB", flush=True)

    rows = []
    for heads, d in configs:
        for n in sizes:
            impls = [("ours", isa) for isa in isas] + ([("ours", "bf16")] if bf16 else []) + \
                [("torch_ref", "-"), ("torch_softmax", "-")]
            for kind, isa in impls:
                est = estimate_bytes("ours" if kind == "ours" else kind, n, heads, d)
                row = {"cpu": label, "cpu_isa": cpu["isa"], "cores": cpu["cores"],
                       "precision": "bf16" if isa == "bf16" else "fp32",
                       "impl": kind if kind != "ours" else f"ours_{isa}", "heads": heads, "head_dim": d,
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
                            r = run_ours(binary, n, heads, d, args.threads, "avx512" if isa == "bf16" else isa,
                                         runs=1 if slow else (3 if big else 5), warmup=0 if slow else 1,
                                         precision="bf16" if isa == "bf16" else "fp32")
                            row["cpu_ms_per_run"] = r.get("cpu_ms_per_run", "")
                            if isa == "bf16":
                                row["rel_err_l2_vs_fp32"] = r.get("rel_err_l2_vs_fp32", "")
                                row["rel_err_max_vs_fp32"] = r.get("rel_err_max_vs_fp32", "")
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

    write_outputs(rows, args, binary, cpu, label)


FIELDS = ["cpu", "cpu_isa", "cores", "precision", "impl", "heads", "head_dim", "tokens", "threads", "median_ms",
          "min_ms", "cpu_ms_per_run", "peak_rss_mb", "qkvo_mb", "est_gb", "rel_err_l2_vs_fp32",
          "rel_err_max_vs_fp32", "status"]


def write_outputs(rows, args, binary, cpu, label):
    fields = FIELDS
    stem = "-".join(label.lower().replace("(", "").replace(")", "").split()) + time.strftime("-%Y-%m-%d")
    with open(os.path.join(args.out_dir, stem + ".csv"), "w", newline="") as f:
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
        f"CPU: {cpu['model']} ({label}), {cpu['cores']} cores, ISA: {cpu['isa']}.",
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
        "`ours_bf16` is the bf16 core (products on AMX tiles where the CPU has AMX-BF16, else AVX512-BF16 dot products; fp32 features and normalisers); "
        "`bf16 err` is its relative L2 error against the fp32 core on the same inputs.",
        "",
        "| impl | precision | heads | d | N | median ms | CPU ms / run | peak RSS MB | RSS / qkvo | "
        "speed-up of ours_best | bf16 err | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
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
        cpu_ms = r.get("cpu_ms_per_run", "")
        cpu_s = "" if cpu_ms in ("", None) else f"{cpu_ms:.1f}"
        err = r.get("rel_err_l2_vs_fp32", "")
        err_s = "" if err in ("", None) else f"{err:.2g}"
        lines.append(f"| {r['impl']} | {r['precision']} | {r['heads']} | {r['head_dim']} | {r['tokens']} | {ms_s} | "
                     f"{cpu_s} | {rss_s} | {ratio_s} | {sp} | {err_s} | {r['status']} |")
    with open(os.path.join(args.out_dir, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(args.out_dir)
    print(f"[scaling] wrote {args.out_dir}/{stem}.csv, {stem}.md, scaling.png", flush=True)


def load_all(out_dir):
    """Every per-machine CSV in out_dir (rows with a cpu column), numbers parsed."""
    rows = []
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".csv"):
            continue
        with open(os.path.join(out_dir, name), newline="") as f:
            for r in csv.DictReader(f):
                if not r.get("cpu"):
                    continue
                for key in ("heads", "head_dim", "tokens"):
                    r[key] = int(r[key])
                for key in ("median_ms", "peak_rss_mb"):
                    r[key] = float(r[key]) if r.get(key) else ""
                rows.append(r)
    return rows


def plot(out_dir):
    """Time per call for each heads x d config and peak RSS (8 x 64): one series per CPU,
    implementation and precision (colour: implementation; line style and marker: CPU)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = load_all(out_dir)
    configs = sorted({(r["heads"], r["head_dim"]) for r in rows})
    cpus = sorted({r["cpu"] for r in rows})
    impls = sorted({r["impl"] for r in rows})
    fig, axes = plt.subplots(1, len(configs) + 1, figsize=(7 * (len(configs) + 1), 6))
    colours = {impl: plt.cm.tab10(i % 10) for i, impl in enumerate(impls)}
    styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "D"]
    for ci, cpu in enumerate(cpus):
        for impl in impls:
            for ki, (h, d) in enumerate(configs):
                pts = sorted((r["tokens"], r["median_ms"], r["peak_rss_mb"]) for r in rows
                             if r["cpu"] == cpu and r["impl"] == impl and r["heads"] == h and r["head_dim"] == d
                             and r["median_ms"] != "")
                if not pts:
                    continue
                n, t, m = zip(*pts)
                style = dict(linestyle=styles[ci % len(styles)], marker=markers[ci % len(markers)],
                             color=colours[impl], label=f"{cpu}: {impl}")
                axes[ki].plot(n, t, **style)
                if ki == 0:
                    axes[-1].plot(n, m, **style)
    panels = [(axes[ki], f"time per call, {h} heads x {d}", "ms") for ki, (h, d) in enumerate(configs)]
    panels.append((axes[-1], f"peak RSS, {configs[0][0]} heads x {configs[0][1]}", "MB"))
    for ax, title, unit in panels:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens N")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes:
        ax.legend(fontsize=6)
    fig.suptitle("one series per CPU (marker and line style) and implementation (colour); each CPU's .md "
                 "gives its commit and load average: wall times on busy cores are inflated", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "scaling.png"), dpi=110)


if __name__ == "__main__":
    main()
