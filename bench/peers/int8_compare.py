#!/usr/bin/python3
"""int8 peers: the engine's int8 against its own fp32, PyTorch dynamic int8 and ONNX Runtime on a QDQ graph.

  /usr/bin/python3 bench/peers/int8_compare.py --pola build/apps/pola --out bench/peers/results/int8-DATE
  /usr/bin/python3 bench/peers/int8_compare.py --models pola_swin_t --batches 1 --rounds 2   # quicker

Per model (randomized official config, make_case.py seed 1, as compare.py uses) it makes:
  work/<arch>/model.int8.pola  `pola quantize` calibrated on --calib-images random normal images (seed 7)
  work/<arch>/b<B>.int8.onnx   qdq_export.py: QDQ around the Linear MatMuls, the same scales as that file
  work/<arch>/b<B>.int8.opt.onnx  the graph ORT runs after its optimizations, and counts its int8 kernels
Then per (model, batch) ROUNDS alternating rounds of engine (fp32), engine_int8, pytorch_int8
(quantize_dynamic of nn.Linear, qint8, the onednn qengine), ort_int8 and ort (fp32), one fresh process each
(peer_runs.Runners, peak RSS by GNU time); figures are medians over rounds. Writes OUT/results.json and
OUT/README.md (table, ratios against the issue 38 goals).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

import numpy as np

from peer_models import ModelCase
from peer_runs import HERE, Runners, int8_model_path, int8_onnx_path, log, run_measured

sys.path.insert(0, os.path.join(HERE, ".."))
import bench_env  # noqa: E402

ENGINES = ["engine", "engine_int8", "pytorch_int8", "ort_int8", "ort"]


def prepare_int8(case, pola, batches, calib_images, threads):
    calib = os.path.join(case.dir, "calib.npy")
    if not os.path.exists(calib):
        np.save(calib, np.random.default_rng(7).standard_normal((calib_images, case.channels, case.size, case.size),
                                                                dtype=np.float32))
    qfile = int8_model_path(case)
    if not os.path.exists(qfile):
        subprocess.run([pola, "quantize", "--model", case.model_path, "--calibration", calib,
                        "--images", str(calib_images), "--threads", str(threads), "-o", qfile], check=True)
    fused = {}
    for batch in batches:
        out = int8_onnx_path(case, batch)
        if not os.path.exists(out):
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "qdq_export.py"), "--onnx", case.onnx_path(batch),
                            "--float", case.model_path, "--int8", qfile, "--out", out], check=True)
        opt = out.replace(".int8.onnx", ".int8.opt.onnx")
        shape = ",".join(str(d) for d in (batch, case.channels, case.size, case.size))
        subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), "--model", out, "--shape", shape,
                        "--threads", str(threads), "--runs", "1", "--warmup", "0", "--optimized", opt],
                       check=True, stdout=subprocess.DEVNULL)
        counts = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "count_ort_ops.py"), opt],
                                check=True, capture_output=True, text=True).stdout
        fused[batch] = json.loads(counts)
        fused[batch].pop("ops")
    return fused


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="pola_swin_t,pola_pvt_tiny")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per process at batch 1 (batch 8: a third)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--calib-images", type=int, default=32)
    ap.add_argument("--peak-gflops", type=float, default=234.0, help="passed to `pola bench` (compare.py's DEFAULT_PEAK_GFLOPS)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--pola", default=os.path.join(HERE, "..", "..", "build", "apps", "pola"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--report-only", action="store_true", help="rewrite OUT/README.md from OUT/results.json")
    ap.add_argument("--no-spin", action="store_true",
                    help="no busy-waiting threads (OMP_WAIT_POLICY=passive, ORT allow_spinning 0): for a loaded machine")
    args = ap.parse_args()
    pola = os.path.abspath(args.pola)
    batches = [int(b) for b in args.batches.split(",")]
    engines = args.engines.split(",")
    os.makedirs(args.out, exist_ok=True)
    if args.report_only:
        with open(os.path.join(args.out, "results.json")) as f:
            results = json.load(f)
        return write_readme(args.out, results, results["args"]["engines"].split(","))

    env = bench_env.environment(pola)
    results = {"date": datetime.datetime.utcnow().isoformat() + "Z", "environment": env,
               "args": vars(args), "ort_int8_kernels": {}, "measurements": []}
    cases = []
    for arch in args.models.split(","):
        case = ModelCase(arch, args.work, 1, pola).prepare(batches)
        results["ort_int8_kernels"][arch] = prepare_int8(case, pola, batches, args.calib_images, args.threads)
        log(f"{arch}: ORT int8 kernels {json.dumps(results['ort_int8_kernels'][arch])}")
        cases.append(case)

    # --peak-gflops: given, so that no engine process spends its time measuring the fp32 peak itself
    runners = Runners(pola, lambda b: args.runs if b == 1 else max(3, args.runs // 3), args.warmup, args.peak_gflops,
                      timeout_s=900, no_spin=args.no_spin)
    for case in cases:
        for batch in batches:
            for r in range(args.rounds):
                order = engines if r % 2 == 0 else list(reversed(engines))
                for engine in order:
                    m = runners.measure(engine, case, batch, args.threads, r)
                    log(f"{case.arch} b{batch} r{r} {engine:13s} median {m.median_ms:9.2f} ms  rss {m.peak_rss_mb:7.1f} MB"
                        f"  load {m.load1_before:.2f}")
                    results["measurements"].append(m.__dict__)
                with open(os.path.join(args.out, "results.json"), "w") as f:
                    json.dump(results, f, indent=1)
    write_readme(args.out, results, engines)


def write_readme(out, results, engines):
    ms = results["measurements"]
    env = results["environment"]
    rows = []
    keys = sorted({(m["model"], m["batch"]) for m in ms}, key=lambda k: (k[0], k[1]))
    for model, batch in keys:
        med = {e: statistics.median([m["median_ms"] for m in ms if (m["model"], m["batch"], m["engine"]) ==
                                     (model, batch, e)] or [float("nan")]) for e in engines}
        rss = {e: statistics.median([m["peak_rss_mb"] for m in ms if (m["model"], m["batch"], m["engine"]) ==
                                     (model, batch, e)] or [float("nan")]) for e in engines}
        rows.append((model, batch, med, rss))
    lines = [f"# int8 peers, {results['date'][:10]}", "",
             f"CPU: {env.get('cpu')}; ISA flags: {env.get('isa_flags')}; commit {env.get('commit')}", "",
             "Medians over alternating rounds (ms; each round one fresh process per engine), 2 threads, "
             "randomized official configs (make_case.py seed 1), calibrated on random images.", "",
             "| model, batch | " + " | ".join(engines) + " | int8/fp32 (goal <= 0.6) | pytorch_int8/int8 (goal >= 2) "
             "| ort_int8/int8 (goal >= 2) | RSS int8/fp32 (goal <= 0.7) |",
             "|---" * (len(engines) + 5) + "|"]
    def ratio(fig, a, b):  # "n/a" for an engine left out by --engines
        return f"{fig[a] / fig[b]:.2f}" if a in fig and b in fig else "n/a"

    for model, batch, med, rss in rows:
        lines.append(f"| {model}, {batch} | " + " | ".join(f"{med[e]:.1f}" for e in engines) +
                     f" | {ratio(med, 'engine_int8', 'engine')} | {ratio(med, 'pytorch_int8', 'engine_int8')}"
                     f" | {ratio(med, 'ort_int8', 'engine_int8')} | {ratio(rss, 'engine_int8', 'engine')} |")
    lines += ["", "Peak RSS (MB, GNU time, median over rounds):", "",
              "| model, batch | " + " | ".join(engines) + " |", "|---" * (len(engines) + 1) + "|"]
    for model, batch, med, rss in rows:
        lines.append(f"| {model}, {batch} | " + " | ".join(f"{rss[e]:.0f}" for e in engines) + " |")
    lines += ["", "ONNX Runtime's optimized QDQ graphs (ort_bench.js --optimized, count_ort_ops.py):", ""]
    for arch, per_batch in results["ort_int8_kernels"].items():
        for batch, c in per_batch.items():
            lines.append(f"- {arch} b{batch}: {c['int8_kernel_count']} int8 kernels {c['int8_kernels']}, "
                         f"{c['QuantizeLinear']} QuantizeLinear, {c['DequantizeLinear']} DequantizeLinear and "
                         f"{c['MatMul_float']} float MatMul left")
    with open(os.path.join(out, "TABLE.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
