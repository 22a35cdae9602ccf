#!/usr/bin/python3
"""A benchmark (not a test): `pola serve` under closed-loop load against `pola bench` of the same model.

For each model (the shipped Fashion-MNIST default, and a randomized pola_pvt_tiny at 224 x 224 made
with the PyTorch reference):
  1. `pola bench --batch B --json` for B in --batches: the engine alone, images/s per batch size;
  2. `pola serve` (--max-batch = the largest B) loaded by `pola bench-serve` at each --concurrency
     (binary-tensor /infer of one image per request; each client keeps its connection), giving
     throughput, p50/p90/p99 latency and the batch sizes the server formed.
The engine at batch 1 and the server at concurrency 1 are run alternately --rounds times (shared
machines drift), and the medians are compared. Two goals of issue 22 are checked and printed:
  - concurrency 1: the server adds <= 1 ms (or <= 5 %) to `pola bench --batch 1`'s median;
  - concurrency 16: throughput >= 0.9 x the best images/s of `pola bench --batch 1..16`.
The table (Markdown) goes to --out with the CPU, ISA, thread count, commit and the load average
before and after, so a figure taken while the machine was busy says so.

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


def bench_model(args, label, path, env, out_rows):
    runs = 5 if args.quick else 20
    requests = 20 if args.quick else args.requests
    engine = {}
    for b in args.batches:
        if b != 1:
            engine[b] = engine_bench(args, path, b, env, runs)
            print(f"{label}: pola bench --batch {b}: {engine[b]['images_per_s']:.1f} images/s", flush=True)
    serve_args = ["--model", f"{label}={path}", "--threads", str(args.threads), "--max-batch",
                  str(max(args.batches)), "--max-wait-ms", str(args.max_wait_ms), "--max-queue", "1024"]
    with Server(args.pola, serve_args) as server:
        # Alternate the engine at batch 1 and the server at concurrency 1.
        b1, s1 = [], []
        for _ in range(args.rounds):
            b1.append(engine_bench(args, path, 1, env, runs))
            s1.append(serve_bench(args, server, label, 1, requests, env))
        engine[1] = min(b1, key=lambda r: abs(r["median_ms"] - statistics.median(x["median_ms"] for x in b1)))
        bench1_ms = statistics.median(r["median_ms"] for r in b1)
        serve1 = {"p50_ms": statistics.median(r["p50_ms"] for r in s1),
                  "p90_ms": statistics.median(r["p90_ms"] for r in s1),
                  "p99_ms": statistics.median(r["p99_ms"] for r in s1),
                  "requests_per_s": statistics.median(r["requests_per_s"] for r in s1),
                  "batch_sizes": s1[-1]["batch_sizes"], "failed": sum(r["failed"] for r in s1)}
        served = {1: serve1}
        for c in args.concurrency:
            if c != 1:
                served[c] = serve_bench(args, server, label, c, max(requests, 4 * c), env)
        server.stop()
    best_b = max(engine, key=lambda b: engine[b]["images_per_s"])
    best = engine[best_b]["images_per_s"]
    added = serve1["p50_ms"] - bench1_ms
    goal1 = added <= 1.0 or added <= 0.05 * bench1_ms
    top_c = max(args.concurrency)
    goal16 = served[top_c]["requests_per_s"] >= 0.9 * best
    out_rows.append({"label": label, "engine": engine, "served": served, "bench1_ms": bench1_ms, "added_ms": added,
                     "goal1": goal1, "best_batch": best_b, "best": best, "goal16": goal16, "top_c": top_c})
    print(f"{label}: concurrency 1 adds {added:+.2f} ms to pola bench --batch 1 ({bench1_ms:.2f} ms): "
          f"{'met' if goal1 else 'NOT met'}; concurrency {top_c}: {served[top_c]['requests_per_s']:.1f} req/s vs "
          f"0.9 x {best:.1f} (batch {best_b}): {'met' if goal16 else 'NOT met'}", flush=True)


def write_table(args, rows, load_before, load_after, commit):
    lines = [f"# `pola serve` closed-loop benchmark", "",
             f"- CPU: {cpu_description()}; ISA {commit['isa']}; engine threads {args.threads or 'all'}",
             f"- commit {commit['commit']}, {platform.platform()}, OMP_WAIT_POLICY={args.omp_wait_policy}",
             f"- load average before {load_before}, after {load_after} "
             f"({'busy: other work shared the cores' if float(load_before.split()[0]) > 0.5 else 'quiet'})",
             f"- server: --max-batch {max(args.batches)} --max-wait-ms {args.max_wait_ms}; load: `pola bench-serve`, "
             f"binary-tensor /infer of one image per request, {'quick run' if args.quick else f'{args.requests} requests'}"
             f" per concurrency; batch 1 vs concurrency 1 alternated {args.rounds} times (medians)", ""]
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
        lines += ["", f"- concurrency 1 adds {r['added_ms']:+.2f} ms to `pola bench --batch 1` "
                  f"({r['bench1_ms']:.2f} ms): goal <= 1 ms or <= 5 % {'met' if r['goal1'] else 'NOT met'}",
                  f"- concurrency {r['top_c']}: {r['served'][r['top_c']]['requests_per_s']:.1f} requests/s against "
                  f"0.9 x {r['best']:.1f} images/s (`pola bench --batch {r['best_batch']}`, the best): "
                  f"{'met' if r['goal16'] else 'NOT met'}", ""]
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
    ap.add_argument("--rounds", type=int, default=3)
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
