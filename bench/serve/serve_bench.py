#!/usr/bin/python3
"""A benchmark (not a test): `pola serve` under closed-loop load against `pola bench` of the same model.

For each model (the shipped Fashion-MNIST default, and a randomized pola_pvt_tiny at 224 x 224 made
with the PyTorch reference):
  1. `pola bench --batch B --json` for B in --batches: the engine alone, images/s per batch size;
  2. `pola serve` (--max-batch = the largest B) loaded by `pola bench-serve` at each --concurrency
     (binary-tensor /infer of one image per request; each client keeps its connection), giving
     throughput, p50/p90/p99 latency, the batch sizes the server formed, the server's own account of
     where a request's time went (its /metrics: receive, decode, queue, inference, handoff, encode,
     send) and the CPU time per request of the server and of the load generator.
Every figure is taken --rounds times, the engine at each batch size and the server at each
concurrency alternated (shared machines drift), the engine at batch 1 right beside the server at
concurrency 1, and the medians are compared. Two goals for the server are checked and printed:
  - concurrency 1: the server adds <= 1 ms (or <= 5 %) to `pola bench --batch 1`'s median;
  - concurrency 16: throughput >= 0.9 x the best images/s of `pola bench --batch 1..16`.
Beside the goal as stated (client p50 - `pola bench` median, two processes), the table gives what
the server adds around its own engine call (client mean - the inference phase), which does not
depend on the two processes' engine speeds agreeing. The load generator runs on the same cores as
the server: its CPU per request is taken from the server's throughput, and the table says how much.
OMP_WAIT_POLICY is the same for both sides (--omp-wait-policy; passive by default, as the README
advises for shared cores). The table (Markdown) goes to --out with the CPU, ISA, thread count,
commit and the load average before and after, so a figure taken while the machine was busy says so.

  /usr/bin/python3 bench/serve/serve_bench.py --pola build/apps/pola --models models \
      --out bench/serve/results/serve_$(date +%Y%m%d).md
  ... --quick    (a short sanity run: few requests, Fashion only)
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
from serve_fixture import Server  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_env import cpu_description, loadavg  # noqa: E402  (the machine, for the result file)


def run_json(cmd, env):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, timeout=3600).stdout
    return json.loads(out.strip().splitlines()[-1])


def engine_bench(args, model, batch, env, runs):
    return run_json([args.pola, "bench", "-m", model, "--batch", str(batch), "--runs", str(runs), "--warmup", "3",
                     "--threads", str(args.threads), "--json"], env)


def serve_bench(args, server, name, concurrency, requests, env):
    return run_json([args.pola, "bench-serve", "--url", f"http://127.0.0.1:{server.port}", "--model", name,
                     "--concurrency", str(concurrency), "--requests", str(requests), "--warmup",
                     str(max(5, concurrency * 2)), "--json"], env)


def tiny_224_model(work):
    """A pola_pvt_tiny (224 x 224, 1000 classes) with random weights, written by the PyTorch reference."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    from export_model import export_model
    from make_case import build_case_model
    from pola_config import get_config
    cfg = get_config("pola_pvt_tiny")
    path = os.path.join(work, "pola_pvt_tiny_random.pola")
    export_model(path, build_case_model(cfg, seed=3).state_dict(), cfg, arch="pola_pvt_tiny")
    return path


PHASES = ["receive", "decode", "queue", "inference", "handoff", "encode", "send"]


def median_report(reports):
    """The median of each figure over alternated runs (batch sizes of the last run)."""
    med = lambda key: statistics.median(r[key] for r in reports)  # noqa: E731
    out = {k: med(k) for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "requests_per_s", "client_cpu_ms")}
    out["server_cpu_ms"] = statistics.median(r.get("server_cpu_ms", 0) for r in reports)
    out["server_phases_ms"] = {p: statistics.median(r["server_phases_ms"].get(p, 0) for r in reports) for p in PHASES}
    out["batch_sizes"] = reports[-1]["batch_sizes"]
    out["failed"] = sum(r["failed"] for r in reports)
    return out


def bench_model(args, label, path, env, out_rows):
    runs = 5 if args.quick else args.bench_runs
    requests = 20 if args.quick else args.requests
    serve_args = ["--model", f"{label}={path}", "--threads", str(args.threads), "--max-batch",
                  str(max(args.batches)), "--max-wait-ms", str(args.max_wait_ms), "--max-queue", "1024"]
    b_runs = {b: [] for b in args.batches}
    s_runs = {c: [] for c in args.concurrency}
    with Server(args.pola, serve_args) as server:
        # Every figure --rounds times, each round the engine at batch 1 right beside the server at
        # concurrency 1, then the other batch sizes, then the other concurrencies.
        for round_ in range(args.rounds):
            order = [("bench", 1), ("serve", 1)] + [("bench", b) for b in args.batches if b != 1] + \
                    [("serve", c) for c in args.concurrency if c != 1]
            for kind, n in order:
                if kind == "bench" and n in b_runs:
                    b_runs[n].append(engine_bench(args, path, n, env, runs))
                elif kind == "serve" and n in s_runs:
                    s_runs[n].append(serve_bench(args, server, label, n, max(requests, 4 * n), env))
            print(f"{label}: round {round_ + 1} of {args.rounds} done", flush=True)
        server.stop()
    engine = {b: {"images_per_s": statistics.median(r["images_per_s"] for r in rs),
                  "median_ms": statistics.median(r["median_ms"] for r in rs)} for b, rs in b_runs.items()}
    served = {c: median_report(rs) for c, rs in s_runs.items()}
    bench1_ms = engine[1]["median_ms"]
    serve1 = served[1]
    best_b = max(engine, key=lambda b: engine[b]["images_per_s"])
    best = engine[best_b]["images_per_s"]
    added = serve1["p50_ms"] - bench1_ms
    goal1 = added <= 1.0 or added <= 0.05 * bench1_ms
    # What the server adds around its own engine call (both from the same process and requests).
    around = serve1["mean_ms"] - serve1["server_phases_ms"]["inference"]
    top_c = max(args.concurrency)
    goal16 = served[top_c]["requests_per_s"] >= 0.9 * best
    out_rows.append({"label": label, "engine": engine, "served": served, "bench1_ms": bench1_ms, "added_ms": added,
                     "around_ms": around, "goal1": goal1, "best_batch": best_b, "best": best, "goal16": goal16, "top_c": top_c})
    print(f"{label}: concurrency 1 adds {added:+.2f} ms to pola bench --batch 1 ({bench1_ms:.2f} ms): "
          f"{'met' if goal1 else 'NOT met'}; concurrency {top_c}: {served[top_c]['requests_per_s']:.1f} req/s vs "
          f"0.9 x {best:.1f} (batch {best_b}): {'met' if goal16 else 'NOT met'}", flush=True)


def write_table(args, rows, load_before, load_after, commit):
    lines = [f"# `pola serve` closed-loop benchmark", "",
             f"- CPU: {cpu_description()}; ISA {commit['isa']}; engine threads {args.threads or 'all'}",
             f"- commit {commit['commit']}, {platform.platform()}, OMP_WAIT_POLICY={args.omp_wait_policy}",
             f"- load average before {load_before}, after {load_after} "
             f"({'busy: other work shared the cores' if max(float(load_before.split()[0]), float(load_after.split()[0])) > 0.5 else 'quiet'})",
             f"- server: --max-batch {max(args.batches)} --max-wait-ms {args.max_wait_ms}; load: `pola bench-serve`, "
             f"binary-tensor /infer of one image per request, {'quick run' if args.quick else f'{args.requests} requests'}"
             f" per concurrency; every figure the median of {args.rounds} alternated rounds", ""]
    for r in rows:
        lines += [f"## {r['label']}", "", "| engine (`pola bench`) | images/s | median ms |", "|---|---:|---:|"]
        for b in sorted(r["engine"]):
            e = r["engine"][b]
            lines.append(f"| --batch {b} | {e['images_per_s']:.1f} | {e['median_ms']:.2f} |")
        lines += ["", "| server, concurrency | requests/s | p50 ms | p90 ms | p99 ms | batch sizes formed (size:answers) |",
                  "|---|---:|---:|---:|---:|---|"]
        for c in sorted(r["served"]):
            s = r["served"][c]
            batches = " ".join(f"{k}:{v}" for k, v in sorted(s["batch_sizes"].items(), key=lambda kv: int(kv[0])))
            lines.append(f"| {c} | {s['requests_per_s']:.1f} | {s['p50_ms']:.2f} | {s['p90_ms']:.2f} | "
                         f"{s['p99_ms']:.2f} | {batches} |")
        lines += ["", "Where a request's time went, by the server's own account (mean ms per request, /metrics), "
                  "and the CPU per request of the server and of the load generator on the same cores:", "",
                  "| concurrency | " + " | ".join(PHASES) + " | client mean ms | server CPU ms | client CPU ms |",
                  "|---|" + "---:|" * (len(PHASES) + 3)]
        for c in sorted(r["served"]):
            s = r["served"][c]
            lines.append(f"| {c} | " + " | ".join(f"{s['server_phases_ms'][p]:.3f}" for p in PHASES) +
                         f" | {s['mean_ms']:.3f} | {s['server_cpu_ms']:.3f} | {s['client_cpu_ms']:.3f} |")
        top = r["served"][r["top_c"]]
        client_share = top["client_cpu_ms"] / max(1e-9, top["client_cpu_ms"] + top["server_cpu_ms"])
        lines += ["", f"- concurrency 1 adds {r['added_ms']:+.2f} ms to `pola bench --batch 1` "
                  f"({r['bench1_ms']:.2f} ms): goal <= 1 ms or <= 5 % {'met' if r['goal1'] else 'NOT met'}; "
                  f"around its own engine call (client mean - inference phase) the server adds {r['around_ms']:.2f} ms",
                  f"- concurrency {r['top_c']}: {r['served'][r['top_c']]['requests_per_s']:.1f} requests/s against "
                  f"0.9 x {r['best']:.1f} images/s (`pola bench --batch {r['best_batch']}`, the best): "
                  f"{'met' if r['goal16'] else 'NOT met'}; the load generator took {100 * client_share:.0f} % of the "
                  f"CPU spent on the requests (server + client)", ""]
    text = "\n".join(lines)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", help="Markdown results file")
    ap.add_argument("--threads", type=int, default=0, help="engine threads (0 = all cores)")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3, help="alternated runs per figure (medians are reported)")
    ap.add_argument("--bench-runs", type=int, default=50, help="timed runs of each `pola bench`")
    ap.add_argument("--max-wait-ms", type=float, default=2)
    ap.add_argument("--omp-wait-policy", default="passive", help="OMP_WAIT_POLICY for both sides ('' = unset)")
    ap.add_argument("--quick", action="store_true", help="a short sanity run: Fashion only, few requests")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.omp_wait_policy:
        env["OMP_WAIT_POLICY"] = args.omp_wait_policy
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy  # the server inherits it
    load_before = loadavg()
    rows = []
    commit = engine_bench(args, os.path.join(args.models, "fashion_pola_pvt.pola"), 1, env, 2)
    bench_model(args, "fashion", os.path.join(args.models, "fashion_pola_pvt.pola"), env, rows)
    if not args.quick:
        with tempfile.TemporaryDirectory() as work:
            bench_model(args, "pola_pvt_tiny_224", tiny_224_model(work), env, rows)
    write_table(args, rows, load_before, loadavg(), commit)


if __name__ == "__main__":
    main()
