#!/usr/bin/python3
"""Where a Dask classification job's time goes (a diagnostic, not a test): the findings are in
bench/dask/README.md.

1. One process, no Dask, one engine thread (what one 2x1 worker does per task): per batch of
   --batch images the seconds of reading the files, decoding + preprocessing them (the binding's
   Model.preprocess, one image at a time), the engine run (Model.run) and the whole Model.classify.
2. polaformer.dask on a LocalCluster (--workers x --threads): the job's wall time, the CPU seconds
   of the client process (where LocalCluster's scheduler runs too) and of each worker process, the
   tasks' compute time as the workers report it (Dask's task stream), the bytes a task sends
   (pickled arguments) and receives (pickled rows), for --task-images images per task.

    PYTHONPATH=build/python /usr/bin/python3 bench/dask/profile_tasks.py --images 10000 --workdir /tmp/fashion
"""
import argparse
import os
import pickle
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from dask_scaleout import write_image_folder  # noqa: E402


def cpu_seconds():
    """This process's user + system CPU seconds so far (all its threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def in_process(model_path, paths, batch):
    import numpy as np
    import polaformer
    m = polaformer.Model(model_path, threads=1)
    phases = dict.fromkeys(("read files", "decode + preprocess", "engine run", "Model.classify (all)"), 0.0)
    cpu0 = cpu_seconds()
    for i in range(0, len(paths), batch):
        part = paths[i:i + batch]
        t0 = time.perf_counter()
        for p in part:
            with open(p, "rb") as f:
                f.read()
        t1 = time.perf_counter()
        x = np.stack([m.preprocess(p) for p in part])
        t2 = time.perf_counter()
        m.run(x)
        t3 = time.perf_counter()
        m.classify(part, top=1, batch=len(part))
        t4 = time.perf_counter()
        for k, dt in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            phases[k] += dt
    out = {k: {"seconds": round(v, 3), "us per image": round(1e6 * v / len(paths), 1)} for k, v in phases.items()}
    out["CPU s, all phases (Model.classify's alone is about half)"] = round(cpu_seconds() - cpu0, 3)
    return out


def on_dask(model_path, paths, workers, threads, task_images, batch):
    from dask.distributed import Client, LocalCluster, get_task_stream
    from polaformer import dask as pdask
    with pdask.passive_openmp_workers():
        cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, host="127.0.0.1",
                               dashboard_address=None)
    with cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        worker_cpu0 = client.run(cpu_seconds)
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        with get_task_stream(client) as stream:
            summary = pdask.classify_files(paths, model_path, "/tmp/wt23_profile.jsonl",
                                           client=client, top=1, batch=batch, task_images=task_images)
        wall, client_cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        worker_cpu = {a: v - worker_cpu0[a] for a, v in client.run(cpu_seconds).items()}
        compute = sum(ss["stop"] - ss["start"] for task in stream.data for ss in task["startstops"]
                      if ss["action"] == "compute")
        other = {}
        for task in stream.data:
            for ss in task["startstops"]:
                if ss["action"] != "compute":
                    other[ss["action"]] = other.get(ss["action"], 0.0) + ss["stop"] - ss["start"]
    largest = summary["largest_task"]
    sample = "\0".join(os.path.abspath(p) for p in paths[:largest])  # what classify_batch gets
    answers = [[("".join(("Ankle", " boot")), 0.99 + i * 1e-9)] for i in range(largest)]  # and returns (top=1)
    return {"layout": f"{workers}x{threads}", "images per task": task_images or "default",
            "largest task": largest, "tasks": summary["batches"],
            "wall seconds": round(wall, 3), "images/s (job)": round(summary["images_per_second"]),
            "client+scheduler CPU s": round(client_cpu, 3),
            "worker CPU s": {a: round(v, 3) for a, v in worker_cpu.items()},
            "task compute s (sum)": round(compute, 3), "task other s (sum)": {k: round(v, 3) for k, v in other.items()},
            "bytes sent by the largest task (pickled paths)": len(pickle.dumps(sample)),
            "bytes back from the largest task (pickled answers)": len(pickle.dumps(answers))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(SOURCE, "models", "fashion_pola_pvt.pola"))
    ap.add_argument("--images", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=64, help="engine batch (default 64)")
    ap.add_argument("--task-images", default="64,0",
                    help="comma-separated images per Dask task to try (0: polaformer.dask's default; default 64,0)")
    ap.add_argument("--layouts", default="2x1,1x2", help="workers x threads, comma-separated")
    ap.add_argument("--workdir", required=True, help="where the PNG files are (written if missing)")
    a = ap.parse_args()
    import json
    import polaformer
    classes = polaformer.Model(a.model, threads=1).classes
    paths = write_image_folder(a.workdir, a.images, classes)
    print(json.dumps({"load average": os.getloadavg(), "in process, 1 engine thread": in_process(a.model, paths, a.batch)},
                     indent=1))
    for layout in a.layouts.split(","):
        w, t = map(int, layout.split("x"))
        for n in map(int, a.task_images.split(",")):
            print(json.dumps(on_dask(a.model, paths, w, t, n or None, a.batch), indent=1), flush=True)
    print(json.dumps({"load average": os.getloadavg()}))


if __name__ == "__main__":
    main()
