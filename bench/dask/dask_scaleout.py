#!/usr/bin/python3
"""Benchmark (not a test): Fashion-MNIST images/s of `pola eval` alone against the Dask example's
library (polaformer.dask) on a LocalCluster, on the same PNG files:

  eval passive     pola eval --data <ImageFolder of the PNGs> (all cores) with OMP_WAIT_POLICY=passive
  eval spinning    the same with OMP_WAIT_POLICY unset (OpenMP's busy-waiting default; the faster of
                   the two on a quiet machine, the slower one when other jobs take its cores)
  eval -t 1        one engine thread (for reference: what one 2x1 worker's engine can do)
  dask 1x2         1 worker process x 2 Dask task threads, the defaults: each task thread's share of
                   the 2 cores is 1, so a one-thread engine run per task thread
  dask 2x1         2 worker processes x 1 task thread, the defaults (a one-thread engine each)
  dask 1x1 team    (only if asked in --layouts) 1 worker process x 1 task thread, --engine-threads 2:
                   one run at a time on an OpenMP team of 2

The reference is the best `pola eval` of the round: the faster of "eval passive" and "eval spinning".
Efficiency = Dask images/s / that reference, measured in alternating rounds (both evals, then each
Dask layout, repeated), reported as the median of the per-round ratios (goal >= 0.9). Dask times
cover the job (submit to last result written, including each worker's model load); the cluster is
started before the clock and closed after it, as a long-lived cluster would be. eval is timed as a
process (start to exit, model load included). Both use engine runs of --batch images; a Dask task
holds --task-images images (default: polaformer.dask.task_size, ~8 tasks per task thread). Each Dask
run reports every worker's model-load count (must be 1).

The machine (bench/bench_env.py: CPU model name, ISA flags, cores, commit, pola --version) and the
load average before and after go into the result file: figures taken while other jobs run are noisy;
re-run in a quiet window.

    PYTHONPATH=build/python /usr/bin/python3 bench/dask/dask_scaleout.py --pola build/apps/pola \\
        --images 10000 --rounds 3 --out bench/dask/results-$(date +%Y-%m-%d).json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "training"))
import fashion_data  # noqa: E402  (the project's IDX reader)
sys.path.insert(0, os.path.join(HERE, ".."))
import bench_env  # noqa: E402  (the machine, for the result file)

LAYOUTS = {  # name: (workers, task threads per worker, engine threads per task); None = default
    "dask 1x2": (1, 2, None),
    "dask 2x1": (2, 1, None),
    "dask 1x1 team": (1, 1, 2),
}
DEFAULT_LAYOUTS = ("dask 1x2", "dask 2x1")
EVAL_POLICIES = {"eval passive": "passive", "eval spinning": None}  # name: OMP_WAIT_POLICY (None: unset)


def folder_name(cls):
    return cls.lower().replace("/", "-").replace(" ", "-")


def write_image_folder(root, count, classes):
    """The first `count` test images as PNG files, one sub-folder per class; returns the paths in order."""
    from PIL import Image
    images, labels = fashion_data.load_split("t10k")
    paths = []
    for i in range(count):
        d = os.path.join(root, folder_name(classes[labels[i]]))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"{i:05d}.png")
        if not os.path.exists(p):
            Image.fromarray(images[i]).save(p)
        paths.append(p)
    return paths


def run_eval(pola, model, folder, batch, threads=0, wait_policy="passive"):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    start = time.perf_counter()
    r = subprocess.run([pola, "eval", "-m", model, "--data", folder, "--batch", str(batch), "--threads", str(threads),
                        "--json"],
                       capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"pola eval failed: {r.stderr}")
    report = json.loads(r.stdout)
    return {"images": report["images"], "seconds": seconds, "images_per_second": report["images"] / seconds,
            "engine_images_per_second": report["images_per_second"], "top1_accuracy": report["top1_accuracy"]}


def run_dask(layout, paths, model, batch, task_images, out_file):
    from dask.distributed import Client, LocalCluster
    from polaformer.dask import classify_files
    workers, task_threads, engine_threads = LAYOUTS[layout]
    # The workers inherit OMP_WAIT_POLICY from this process's environment (main sets it).
    with LocalCluster(n_workers=workers, threads_per_worker=task_threads, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        summary = classify_files(paths, model, out_file, client=client, engine_threads=engine_threads, top=1,
                                 batch=batch, task_images=task_images)
    loads = {address: counts["loads"] for address, counts in summary["workers"].items()}
    return {"images": summary["images"], "errors": summary["errors"], "tasks": summary["batches"],
            "largest_task": summary["largest_task"], "seconds": summary["seconds"],
            "images_per_second": summary["images_per_second"], "model_loads_per_worker": loads}


def top1_by_file(out_file):
    with open(out_file) as f:
        return {row["file"]: row["top"][0]["class"] for row in map(json.loads, f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", default=os.path.join(SOURCE, "build", "apps", "pola"))
    ap.add_argument("--model", default=os.path.join(SOURCE, "models", "fashion_pola_pvt.pola"))
    ap.add_argument("--images", type=int, default=10000, help="first N Fashion-MNIST test images (default 10000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--batch", type=int, default=64, help="images per engine run, eval and Dask alike (default 64)")
    ap.add_argument("--task-images", type=int, help="images per Dask task (default: polaformer.dask.task_size)")
    ap.add_argument("--layouts", default=",".join(DEFAULT_LAYOUTS),
                    help=f"Dask layouts to run (default: {', '.join(DEFAULT_LAYOUTS)}; known: {', '.join(LAYOUTS)})")
    ap.add_argument("--workdir", help="where the PNG files go (default: a temporary folder)")
    ap.add_argument("--out", help="write the results as JSON here too")
    ap.add_argument("--omp-wait-policy", default="passive",
                    help="OMP_WAIT_POLICY for the Dask workers (default passive, what polaformer.dask sets for the "
                         "clusters it starts; '' = unset: OpenMP's busy-waiting default). eval runs with both.")
    a = ap.parse_args()
    # the Dask workers inherit it
    if a.omp_wait_policy:
        os.environ["OMP_WAIT_POLICY"] = a.omp_wait_policy
    else:
        os.environ.pop("OMP_WAIT_POLICY", None)
    import polaformer
    classes = polaformer.Model(a.model, threads=1).classes
    layouts = [name for name in a.layouts.split(",") if name]
    for name in layouts:
        if name not in LAYOUTS:
            sys.exit(f"unknown layout '{name}'; known: {', '.join(LAYOUTS)}")
    result = {"machine": bench_env.environment(a.pola), "loadavg_before": os.getloadavg(), "images": a.images,
              "batch": a.batch, "task_images": a.task_images or "default", "model": a.model,
              "reference": "the faster of eval passive and eval spinning, per round",
              "dask_omp_wait_policy": a.omp_wait_policy or "(unset)", "rounds": []}
    with tempfile.TemporaryDirectory() as scratch:
        folder = a.workdir or os.path.join(scratch, "fashion")
        paths = write_image_folder(folder, a.images, classes)
        agreement = {}
        for r in range(a.rounds):
            entry = {name: run_eval(a.pola, a.model, folder, a.batch, wait_policy=policy)
                     for name, policy in EVAL_POLICIES.items()}
            entry["eval -t 1"] = run_eval(a.pola, a.model, folder, a.batch, threads=1)
            reference = max(entry[name]["images_per_second"] for name in EVAL_POLICIES)
            for name in layouts:
                out_file = os.path.join(scratch, f"dask-{r}-{name.replace(' ', '_')}.jsonl")
                entry[name] = run_dask(name, paths, a.model, a.batch, a.task_images, out_file)
                entry[name]["efficiency"] = entry[name]["images_per_second"] / reference
                agreement[name] = top1_by_file(out_file)
            result["rounds"].append(entry)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v['images_per_second']:.0f} img/s" for k, v in entry.items()),
                  file=sys.stderr)
        # The Dask layouts must agree with each other image by image (they run the same engine).
        names = list(agreement)
        result["top1_disagreements_between_layouts"] = sum(
            agreement[names[0]][p] != agreement[n][p] for n in names[1:] for p in agreement[names[0]])
    result["loadavg_after"] = os.getloadavg()
    # Other jobs on the machine (a load average near or above its cores) make every figure noisy.
    result["under_load"] = max(result["loadavg_before"][0], result["loadavg_after"][0]) > 0.5
    result["summary"] = {f"{name} images/s (median)": statistics.median(e[name]["images_per_second"]
                                                                        for e in result["rounds"])
                         for name in (*EVAL_POLICIES, "eval -t 1")}
    for name in layouts:
        rounds = [e[name] for e in result["rounds"]]
        result["summary"][name] = {
            "images/s (median)": statistics.median(x["images_per_second"] for x in rounds),
            "efficiency (median of per-round ratios)": statistics.median(x["efficiency"] for x in rounds),
            "model loads per worker (every run)": sorted({v for x in rounds for v in x["model_loads_per_worker"].values()}),
        }
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
