#!/usr/bin/python3
"""Peer comparison: the engine vs PyTorch 1.13 vs ONNX Runtime 1.30, same weights, same cores.

  /usr/bin/python3 bench/peers/compare.py                 # all four models, batch 1 and 8, 1 and 2 threads
  /usr/bin/python3 bench/peers/compare.py --quick         # pola_swin_t + pola_pvt_tiny, batch 1, 2 threads
  /usr/bin/python3 bench/peers/compare.py --models pola_swin_t --batches 1 --threads 1,2 --rounds 5

Per configuration (model, batch, threads) it runs ROUNDS rounds of engine, PyTorch, ORT (and
PyTorch with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset, when the environment sets them), one
fresh process each, alternating so that drift in the machine's load hits every engine alike.
Each process warms up, times RUNS runs (fewer for big batches, see runs_for_batch) and reports
median and p90; the figures reported are the medians over rounds. Peak RSS is each process's own.
First it checks that the three give the same logits on one input. Writes OUT/results.{md,csv,json}
and OUT/latency.png (OUT: bench/peers/results, or its quick/, nospin/, quick-nospin/ subfolders).
Needs bench/peers/install_peers.sh and a Release build of `pola`.
"""
import argparse
import datetime
import math
import os
import platform
import subprocess
import sys

from peer_agreement import check_agreement
from peer_models import REPO, ModelCase
from peer_runs import HERE, OPENBLAS_TUNING_VARS, MeasurementTimeout, Runners, log
from results_report import save_results, write_report

sys.path.insert(0, os.path.join(HERE, ".."))
import bench_env  # noqa: E402  (the machine, for the result file)

ALL_MODELS = ["pola_pvt_tiny", "pola_pvt_small", "pola_swin_t", "pola_swin_s"]
QUICK = {"models": "pola_swin_t,pola_pvt_tiny", "batches": "1", "threads": "2"}
# fp32 peak of these 2 cores as measured here on a quiet machine (Nov 2026): oneDNN's f32 matmul
# reaches 223-233 GFLOP/s on 2 threads, a hand-written FMA loop 116.8 GFLOP/s per core (PEERS.md's
# ~477 does not hold on today's machines). Passed to `pola bench` so it does not re-measure it.
DEFAULT_PEAK_GFLOPS = 234.0


def parse_list(text, kind=str):
    return [kind(x) for x in text.split(",") if x]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"shorthand for {QUICK} (explicit options win)")
    ap.add_argument("--models", help=f"comma list (default: {','.join(ALL_MODELS)})")
    ap.add_argument("--batches", help="comma list (default: 1,8)")
    ap.add_argument("--threads", help="comma list (default: 1,2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per configuration")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per process at batch 1")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs per process")
    ap.add_argument("--seed", type=int, default=1, help="random weights of make_case.py")
    ap.add_argument("--pola", default=os.path.join(REPO, "build-peers", "apps", "pola"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"), help="model files and ONNX exports")
    ap.add_argument("--out", help="results folder")
    ap.add_argument("--peak-gflops", type=float, default=0,
                    help="fp32 peak passed to `pola bench`; 0 (default) lets each engine process measure it "
                         f"(issue 19: warm-up, best of the models' shapes); e.g. {DEFAULT_PEAK_GFLOPS} for the "
                         "figure measured here in Nov 2026")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="set in every engine's process alike (e.g. OMP_WAIT_POLICY=passive to study spinning)")
    ap.add_argument("--no-spin", action="store_true",
                    help="no busy-waiting threads in any engine (OMP_WAIT_POLICY=passive for the engine and "
                         "PyTorch, allow_spinning 0 for ORT): what a fair comparison needs on oversubscribed cores")
    ap.add_argument("--timeout", type=float, default=900, help="kill a measuring process after this many seconds")
    ap.add_argument("--engines", default="engine,engine_bf16,pytorch,pytorch_bf16,ort",
                    help="comma list of engine, engine_bf16 (pola --precision bf16), pytorch, pytorch_bf16 "
                         "(.bfloat16() model), ort")
    ap.add_argument("--agreement-threads", type=int, default=2)
    ap.add_argument("--skip-agreement", action="store_true")
    args = ap.parse_args(argv)
    defaults = QUICK if args.quick else {"models": ",".join(ALL_MODELS), "batches": "1,8", "threads": "1,2"}
    args.models = parse_list(args.models or defaults["models"])
    args.batches = parse_list(args.batches or defaults["batches"], int)
    args.threads = parse_list(args.threads or defaults["threads"], int)
    args.engines = parse_list(args.engines)
    args.env = dict(item.split("=", 1) for item in args.env)
    # Each kind of run keeps its own folder: quick/, nospin/, quick-nospin/ beside the full run's files.
    kind = "-".join(k for k, on in (("quick", args.quick), ("nospin", args.no_spin)) if on)
    args.out = args.out or os.path.join(HERE, "results", kind)
    return args


def runs_for_batch(runs):
    # A batch of 8 takes ~8x as long; fewer timed runs keep a full comparison near half an hour.
    # Never fewer than 3, so a median and p90 still mean something.
    return lambda batch: max(3, math.ceil(runs * 2 / batch)) if batch > 1 else runs


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def bf16_capability():
    """Which native bf16 instructions this CPU has (what engine_bf16 runs on), from /proc/cpuinfo."""
    flags = bench_env.cpu_flags()
    found = [name for flag, name in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16")) if flag in flags]
    return ", ".join(found) or "none (engine_bf16 is refused; PyTorch bf16 emulates it)"


def machine_description():
    import torch  # only for its version; the timed PyTorch runs in child processes
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": bench_env.cpu_model(), "cpu_bf16": bf16_capability(), "cores": bench_env.cores(),
        "kernel": platform.release(), "git_head": bench_env.git_commit(REPO),
        # Other engineers share this checkout: say whether the engine was built from edited sources.
        "engine_sources_dirty": command_output(["git", "status", "--porcelain", "--", "engine", "kernels",
                                                "weights", "apps", "CMakeLists.txt"]) != "",
        "torch": torch.__version__,
        "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"),
        "openblas_env": {name: os.environ.get(name) for name in OPENBLAS_TUNING_VARS},
    }


def check_setup(args):
    problems = []
    if not os.access(args.pola, os.X_OK):
        problems.append(f"{args.pola} missing: cmake -S . -B build-peers -DCMAKE_BUILD_TYPE=Release && "
                        "cmake --build build-peers -j2 --target pola")
    if "ort" in args.engines and not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        problems.append("onnxruntime-node missing: run bench/peers/install_peers.sh")
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    reference_blas = "reference" in blas or blas.endswith("blas/libblas.so.3")
    if reference_blas and any(e.startswith("pytorch") for e in args.engines):
        problems.append("libblas.so.3 is the reference BLAS (PyTorch ~15x slow): run install_peers.sh")
    if problems:
        sys.exit("compare.py: " + "\n".join(problems))


def main(argv=None):
    args = parse_args(argv)
    check_setup(args)
    os.makedirs(args.out, exist_ok=True)
    results = {"meta": machine_description(), "args": {k: v for k, v in vars(args).items()},
               "agreement": [], "measurements": [], "timeouts": []}
    results["meta"]["load_at_start"] = os.getloadavg()

    cases = []
    for arch in args.models:
        log(f"preparing {arch}: model file and ONNX export (batches {args.batches})")
        onnx_batches = sorted(set(args.batches) | {1}) if "ort" in args.engines else []
        cases.append(ModelCase(arch, args.work, args.seed, os.path.abspath(args.pola)).prepare(onnx_batches))

    if not args.skip_agreement and "ort" in args.engines:  # the agreement check compares all three
        for case in cases:
            agreement = check_agreement(args.pola, case, args.agreement_threads)
            results["agreement"].append(agreement)
            log(f"agreement {case.arch}: argmax {agreement['argmax']}, "
                + ", ".join(f"{k} {v:.2e}" for k, v in agreement["diff"].items())
                + ("" if agreement["agree"] else "  <-- DISAGREE"))

    engines = list(args.engines)
    if any(os.environ.get(name) for name in OPENBLAS_TUNING_VARS):
        engines.append("pytorch_openblas_unset")
    runners = Runners(args.pola, runs_for_batch(args.runs), args.warmup, args.peak_gflops, args.env, args.timeout,
                      args.no_spin)
    for case in cases:
        for batch in args.batches:
            for threads in args.threads:
                for round_index in range(args.rounds):
                    for engine in engines:
                        try:
                            m = runners.measure(engine, case, batch, threads, round_index)
                        except MeasurementTimeout as e:
                            log(f"{case.arch} b{batch} t{threads} r{round_index} {engine}: {e}")
                            results["timeouts"].append({"model": case.arch, "batch": batch, "threads": threads,
                                                        "engine": engine, "round": round_index,
                                                        "load1": os.getloadavg()[0]})
                            continue
                        results["measurements"].append(m)
                        log(f"{case.arch} b{batch} t{threads} r{round_index} {engine:8s} median {m.median_ms:9.2f} ms"
                            f"  p90 {m.p90_ms:9.2f}  rss {m.peak_rss_mb:7.1f} MB  load {m.load1_before:.2f}")
                        save_results(results, args.out)  # a stopped run keeps what it measured
    results["meta"]["load_at_end"] = os.getloadavg()
    save_results(results, args.out)
    print(write_report(results, args.out))


if __name__ == "__main__":
    main()
