"""Classify many images on a dask.distributed cluster.

    from polaformer.dask import classify_files
    summary = classify_files(paths, "model.pola", "out.csv")               # a LocalCluster here
    summary = classify_files(paths, "model.pola", "out.jsonl",
                             scheduler="tcp://10.0.0.5:8786")              # a running cluster

The images are cut into batches, one Dask task per batch. Each worker process
loads the model once, on its first task, and keeps it for every later task
(one Model serves all the worker's task threads: inference releases the GIL).
The engine's threads per run are the machine's cores divided by the Dask task
threads of all workers on that machine, so workers x threads never
oversubscribe the cores. Results come back in input order and are written as
CSV (path, class_1, prob_1, ..., error) or JSON lines
({"path": ..., "top": [{"class": ..., "prob": ...}, ...]}), by the output's
extension. An image that cannot be read gets an `error` and does not stop
the run.

On a real cluster every worker needs the polaformer package (the same build)
and python3-distributed, and must see the model file and the images at the
paths given (a shared file system); paths are made absolute on the client.
"""
import collections
import csv
import json
import os
import threading
import time

import polaformer
from dask.distributed import Client, LocalCluster, get_worker
from distributed.comm import get_address_host

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".pgm", ".ppm", ".pnm", ".pbm", ".tga", ".psd")

# ---- worker side: one model per process -------------------------------------
_models = {}
_models_lock = threading.Lock()
_loads = collections.Counter()   # model loads in this process, by (path, threads)
_tasks = collections.Counter()   # batches run in this process, by model path


def _engine_threads(threads_by_host):
    """Engine threads for a run on this worker: its cores over all Dask task threads on its host."""
    worker = get_worker()
    cores = len(os.sched_getaffinity(0))
    own_threads = getattr(worker, "state", worker).nthreads  # Worker.state from distributed 2022.12 on
    task_threads = threads_by_host.get(get_address_host(worker.address), own_threads)
    return max(1, cores // max(1, task_threads))


def _worker_model(model_path, threads):
    key = (model_path, threads)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = polaformer.Model(model_path, threads=threads)
            _models[key] = model
            _loads[key] += 1
        return model


def _rows(paths, ranked):
    return [{"path": p, "top": [{"class": c, "prob": float(pr)} for c, pr in r]} for p, r in zip(paths, ranked)]


def classify_batch(paths, model_path, top, threads_by_host, engine_threads=None):
    """One task: the top-k of each image of `paths` (absolute paths on this worker), as rows."""
    threads = engine_threads or _engine_threads(threads_by_host)
    model = _worker_model(model_path, threads)
    with _models_lock:
        _tasks[model_path] += 1
    try:
        return _rows(paths, model.classify(paths, top=top))
    except polaformer.InputError:
        pass  # a bad image among good ones: classify one at a time, so only it fails
    rows = []
    for p in paths:
        try:
            rows.extend(_rows([p], model.classify([p], top=top)))
        except polaformer.InputError as e:
            rows.append({"path": p, "top": [], "error": str(e)})
    return rows


def worker_counts():
    """On a worker: {'loads': model loads, 'tasks': batches run} in this process."""
    with _models_lock:
        return {"loads": sum(_loads.values()), "tasks": sum(_tasks.values())}


# ---- client side --------------------------------------------------------------
def image_paths(inputs):
    """Files as given; folders expanded to the image files under them, recursively, sorted."""
    out = []
    for item in inputs:
        item = os.fspath(item)
        if os.path.isdir(item):
            found = []
            for root, dirs, files in os.walk(item):
                dirs.sort()
                found += [os.path.join(root, f) for f in files if f.lower().endswith(IMAGE_EXTENSIONS)]
            out += sorted(found)
        else:
            out.append(item)
    return out


def threads_by_host(client):
    """Dask task threads per host over the cluster's current workers."""
    counts = collections.Counter()
    for address, info in client.scheduler_info()["workers"].items():
        counts[get_address_host(address)] += info["nthreads"]
    return dict(counts)


class _Writer:
    def __init__(self, path, top):
        self.jsonl = path.endswith((".jsonl", ".json"))
        self.file = open(path, "w", newline="", encoding="utf-8")
        if not self.jsonl:
            self.csv = csv.writer(self.file)
            header = ["path"]
            for k in range(1, top + 1):
                header += [f"class_{k}", f"prob_{k}"]
            self.csv.writerow(header + ["error"])
        self.top = top

    def write(self, row):
        if self.jsonl:
            self.file.write(json.dumps(row) + "\n")
            return
        cells = [row["path"]]
        for k in range(self.top):
            entry = row["top"][k] if k < len(row["top"]) else None
            cells += [entry["class"], repr(entry["prob"])] if entry else ["", ""]
        self.csv.writerow(cells + [row.get("error", "")])

    def close(self):
        self.file.close()


def classify_files(inputs, model, output, scheduler=None, client=None, workers=2, threads_per_worker=1,
                   engine_threads=None, top=5, batch=64):
    """Classifies `inputs` (image files and folders) with the model file `model` on a Dask cluster.

    The cluster is `client` if given, else the scheduler at `scheduler` (tcp://host:port), else a
    LocalCluster of `workers` processes with `threads_per_worker` task threads each, on 127.0.0.1.
    Writes one row per image to `output` (.csv, or .jsonl for JSON lines) in input order. Returns a
    summary dict: images, errors, seconds, images_per_second, and per worker address its model
    loads and tasks (each worker that ran a task loads the model exactly once).
    """
    if top < 1 or batch < 1:
        raise ValueError("top and batch must be >= 1")
    given = image_paths(inputs)
    model_path = os.path.abspath(os.fspath(model))
    if os.path.exists(model_path) or (client is None and not scheduler):
        polaformer.Model(model_path, threads=1)  # a bad model file fails here, once, not on every worker
    # (otherwise only the workers see the file: the first task's error names it)
    cluster = None
    if client is None:
        if scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
        owned_client = client
    else:
        owned_client = None
    try:
        return _classify_on(client, given, model_path, output, engine_threads, top, batch)
    finally:
        if owned_client is not None:
            owned_client.close()
        if cluster is not None:
            cluster.close()


def _classify_on(client, given, model_path, output, engine_threads, top, batch):
    client.wait_for_workers(1)
    hosts = threads_by_host(client)
    batches = [given[i:i + batch] for i in range(0, len(given), batch)]
    # Enough tasks in flight to keep every task thread busy; bounded, so ten million images
    # never sit in the scheduler at once.
    window = max(8, 4 * sum(hosts.values()))
    pending = collections.deque()
    writer = _Writer(output, top)
    errors = 0
    start = time.perf_counter()
    try:
        next_batch = 0
        while next_batch < len(batches) or pending:
            while next_batch < len(batches) and len(pending) < window:
                paths = batches[next_batch]
                pending.append((paths, client.submit(classify_batch, [os.path.abspath(p) for p in paths], model_path,
                                                     top, hosts, engine_threads, pure=False)))
                next_batch += 1
            paths, future = pending.popleft()
            for given_path, row in zip(paths, future.result()):
                row["path"] = given_path  # as the caller named it
                errors += "error" in row
                writer.write(row)
            future.release()
    finally:
        writer.close()
    seconds = time.perf_counter() - start
    return {
        "images": len(given),
        "errors": errors,
        "batches": len(batches),
        "seconds": seconds,
        "images_per_second": len(given) / seconds if seconds > 0 else 0.0,
        "workers": client.run(worker_counts),
    }
