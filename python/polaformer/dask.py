"""Classify many images on a dask.distributed cluster.

    from polaformer.dask import classify_files
    summary = classify_files(paths, "model.pola", "out.csv")               # a LocalCluster here
    summary = classify_files(paths, "model.pola", "out.jsonl",
                             scheduler="tcp://10.0.0.5:8786")              # a running cluster

The images are cut into batches, one Dask task per batch. Each worker process
loads the model once, on its first task, and keeps it for every later task
(one Model serves all the worker's task threads: inference releases the GIL).
Each task thread's share of the cores is the machine's cores divided by the
Dask task threads of all workers on that machine, so workers x threads never
oversubscribe the cores. A task uses its share as lanes: its batch is split
into up to `share` parts of at least 8 images, decoded and run at once, each
on share / lanes engine threads. On small models, independent one-thread runs
keep the cores busier than one run on an OpenMP team, whose threads wait for
each other at every layer (and for any Dask thread that takes a core from one
of them). Results come back in input order and are written as
CSV (path, class_1, prob_1, ..., error) or JSON lines
({"path": ..., "top": [{"class": ..., "prob": ...}, ...]}), by the output's
extension. An image that cannot be read gets an `error` and does not stop
the run.

On a real cluster every worker needs the polaformer package (the same build)
and python3-distributed, and must see the model file and the images at the
paths given (a shared file system); paths are made absolute on the client.
"""
import collections
import concurrent.futures
import csv
import json
import os
import threading
import time

import dask
import polaformer
from dask.distributed import Client, LocalCluster, get_worker
from distributed.comm import get_address_host

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".pgm", ".ppm", ".pnm", ".pbm", ".tga", ".psd")

# ---- worker side: one model per process -------------------------------------
_models = {}
_models_lock = threading.Lock()
_loads = collections.Counter()   # model loads in this process, by (path, threads)
_tasks = collections.Counter()   # batches run in this process, by model path


MIN_LANE_IMAGES = 8  # a lane runs at least this many images of a task's batch
_lane_pool = None    # the threads that run a task's lanes besides its own thread
_lane_pool_size = 0


def _core_share(threads_by_host):
    """This worker's cores per task thread: its host's cores over all Dask task threads on that host."""
    worker = get_worker()
    cores = len(os.sched_getaffinity(0))
    own_threads = getattr(worker, "state", worker).nthreads  # Worker.state from distributed 2022.12 on
    task_threads = threads_by_host.get(get_address_host(worker.address), own_threads)
    return max(1, cores // max(1, task_threads))


def lanes_and_threads(share, batch, lanes=None, engine_threads=None):
    """(lanes, engine threads per run) for a task thread with `share` cores and batches of `batch` images.

    By default the share is cut into as many lanes as the batch fills with MIN_LANE_IMAGES each, the
    engine threads per run being what is left per lane; `lanes` and `engine_threads` override. Both
    depend on the configured batch only, never on a task's own (last, shorter) batch, so a worker
    keeps one model.
    """
    if lanes is None:
        lanes = 1 if engine_threads else max(1, min(share, batch // MIN_LANE_IMAGES))
    threads = engine_threads or max(1, share // lanes)
    return lanes, threads


def _worker_model(model_path, threads):
    key = (model_path, threads)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = polaformer.Model(model_path, threads=threads)
            _models[key] = model
            _loads[key] += 1
        return model


def _lane_executor(size):
    """The worker's lane threads: at least `size` of them (grown when asked for more, never shrunk)."""
    global _lane_pool, _lane_pool_size
    with _models_lock:
        if _lane_pool is None or _lane_pool_size < size:
            _lane_pool = concurrent.futures.ThreadPoolExecutor(max_workers=size, thread_name_prefix="polaformer-lane")
            _lane_pool_size = size
        return _lane_pool


def _rows(paths, ranked):
    return [{"path": p, "top": [{"class": c, "prob": float(pr)} for c, pr in r]} for p, r in zip(paths, ranked)]


def _classify_rows(model, paths, top):
    """Rows for `paths`; an unreadable image gets an error row and does not stop the others."""
    try:
        return _rows(paths, model.classify(paths, top=top, batch=min(len(paths), 256)))
    except polaformer.InputError:
        pass  # a bad image among good ones: classify one at a time, so only it fails
    rows = []
    for p in paths:
        try:
            rows.extend(_rows([p], model.classify([p], top=top)))
        except polaformer.InputError as e:
            rows.append({"path": p, "top": [], "error": str(e)})
    return rows


def classify_batch(paths, model_path, top, threads_by_host, engine_threads=None, lanes=None, batch=None):
    """One task: the top-k of each image of `paths` (absolute paths on this worker), as rows in order."""
    lanes, threads = lanes_and_threads(_core_share(threads_by_host), batch or len(paths), lanes, engine_threads)
    model = _worker_model(model_path, threads)
    with _models_lock:
        _tasks[model_path] += 1
    parts = min(lanes, len(paths))
    if parts <= 1:
        return _classify_rows(model, paths, top)
    bounds = [len(paths) * i // parts for i in range(parts + 1)]
    chunks = [paths[bounds[i]:bounds[i + 1]] for i in range(parts)]
    # The task's own thread runs the first lane; the pool has room for every task thread's other lanes.
    task_threads = getattr(get_worker(), "state", get_worker()).nthreads
    others = [_lane_executor((lanes - 1) * task_threads).submit(_classify_rows, model, chunk, top)
              for chunk in chunks[1:]]
    rows = _classify_rows(model, chunks[0], top)
    for lane in others:
        rows.extend(lane.result())
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


def passive_openmp_workers():
    """A dask.config context: worker processes started in it get OMP_WAIT_POLICY=passive from their
    first instruction on, unless this process's environment sets it (then they inherit that).

    A worker shares its machine's cores with the Dask scheduler, nanny and event loop; an engine
    run on an OpenMP team whose threads busy-wait can lose a time slice at every layer when another
    thread takes a core (README "Performance"). OpenMP reads the policy once, when it loads, and
    numpy's OpenMP BLAS loads it before a Nanny's `env=` applies: hence the pre-spawn environment.
    """
    return dask.config.set({"distributed.nanny.pre-spawn-environ.OMP_WAIT_POLICY": "passive"})


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
                   engine_threads=None, top=5, batch=64, lanes=None):
    """Classifies `inputs` (image files and folders) with the model file `model` on a Dask cluster.

    The cluster is `client` if given, else the scheduler at `scheduler` (tcp://host:port), else a
    LocalCluster of `workers` processes with `threads_per_worker` task threads each, on 127.0.0.1.
    Each task runs its batch in `lanes` parts at once with `engine_threads` engine threads each
    (None: from the task thread's share of its machine's cores, see lanes_and_threads).
    Writes one row per image to `output` (.csv, or .jsonl for JSON lines) in input order. Returns a
    summary dict: images, errors, seconds, images_per_second, and per worker address its model
    loads and tasks (each worker that ran a task loads the model exactly once).
    """
    if top < 1 or batch < 1:
        raise ValueError("top and batch must be >= 1")
    if (lanes is not None and lanes < 1) or (engine_threads is not None and engine_threads < 1):
        raise ValueError("lanes and engine_threads must be >= 1 (or None: from the cores)")
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
            with passive_openmp_workers():
                cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
        owned_client = client
    else:
        owned_client = None
    try:
        return _classify_on(client, given, model_path, output, engine_threads, lanes, top, batch)
    finally:
        if owned_client is not None:
            owned_client.close()
        if cluster is not None:
            cluster.close()


def _classify_on(client, given, model_path, output, engine_threads, lanes, top, batch):
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
                                                     top, hosts, engine_threads, lanes, batch, pure=False)))
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
