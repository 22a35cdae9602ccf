"""Classify many images on a dask.distributed cluster.

    from polaformer.dask import classify_files
    summary = classify_files(paths, "model.pola", "out.csv")               # a LocalCluster here
    summary = classify_files(paths, "model.pola", "out.jsonl",
                             scheduler="tcp://10.0.0.5:8786")              # a running cluster

The images are cut into tasks of `task_images` images (by default sized from the
job: big tasks first, shrinking towards the end, see task_sizes), each run in
engine batches of `batch` images. Every task costs the client and the scheduler a
few milliseconds of CPU, taken from the same cores on a small cluster: tasks of 64
Fashion-MNIST images spent a quarter of the job's CPU there (bench/dask/README.md).
Each worker process loads the model once, on its first task, and keeps it for
every later task (one Model serves all the worker's task threads: inference
releases the GIL). Each task thread's engine gets the machine's cores divided by
the Dask task threads of all workers on that machine, so workers x threads never
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


MAX_TASK_IMAGES = 1024  # default tasks never hold more images (ten million images make ~10,000 tasks)


def _core_share(threads_by_host):
    """This worker's cores per task thread: its host's cores over all Dask task threads on that host."""
    worker = get_worker()
    cores = len(os.sched_getaffinity(0))
    own_threads = getattr(worker, "state", worker).nthreads  # Worker.state from distributed 2022.12 on
    task_threads = threads_by_host.get(get_address_host(worker.address), own_threads)
    return max(1, cores // max(1, task_threads))


def task_sizes(images, task_threads, batch):
    """Default images per task, in order: each task takes the remaining images over twice the task
    threads, in whole engine batches of `batch` images, at least one batch and at most
    MAX_TASK_IMAGES (or one batch, if larger); the last task takes what is left.

    Big tasks first (each task costs the client, the scheduler and the worker a few milliseconds of
    CPU), shrinking towards the end, so the last tasks are short and no task thread waits long for
    another to finish (OpenMP's "guided" schedule). 10,000 images on 2 task threads: 18 tasks,
    1024 images down to 64 and a last one of 16.
    """
    sizes = []
    remaining = images
    while remaining > 0:
        share = -(-remaining // (2 * max(1, task_threads)))
        size = max(batch, min(-(-share // batch) * batch, MAX_TASK_IMAGES))
        sizes.append(min(size, remaining))
        remaining -= sizes[-1]
    return sizes


def _worker_model(model_path, threads):
    key = (model_path, threads)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = polaformer.Model(model_path, threads=threads)
            _models[key] = model
            _loads[key] += 1
        return model


def classify_batch(joined_paths, model_path, top, threads_by_host, engine_threads=None, batch=64):
    """One task: for each image of `joined_paths` (absolute paths on this worker, joined by NUL: one
    string, which Dask neither walks item by item nor pickles as 1000 objects), in order, its top-k
    as a list of (class, probability), or the error message (a str) if it cannot be read."""
    paths = joined_paths.split("\0")
    model = _worker_model(model_path, engine_threads or _core_share(threads_by_host))
    with _models_lock:
        _tasks[model_path] += 1
    try:
        return model.classify(paths, top=top, batch=min(batch, len(paths)))
    except polaformer.InputError:
        pass  # a bad image among good ones: classify its engine batch one image at a time, so only it fails
    ranked = []
    for i in range(0, len(paths), batch):
        part = paths[i:i + batch]
        try:
            ranked += model.classify(part, top=top, batch=len(part))
            continue
        except polaformer.InputError:
            pass
        for p in part:
            try:
                ranked += model.classify([p], top=top)
            except polaformer.InputError as e:
                ranked.append(str(e))
    return ranked


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

    def write(self, path, answer):
        """One image's row: `answer` is its top-k as (class, probability) pairs, or an error message."""
        error = answer if isinstance(answer, str) else None
        top = [] if error is not None else answer
        if self.jsonl:
            row = {"path": path, "top": [{"class": c, "prob": p} for c, p in top]}
            if error is not None:
                row["error"] = error
            self.file.write(json.dumps(row) + "\n")
            return
        cells = [path]
        for k in range(self.top):
            cells += [top[k][0], repr(top[k][1])] if k < len(top) else ["", ""]
        self.csv.writerow(cells + [error or ""])

    def close(self):
        self.file.close()


def classify_files(inputs, model, output, scheduler=None, client=None, workers=2, threads_per_worker=1,
                   engine_threads=None, top=5, batch=64, task_images=None):
    """Classifies `inputs` (image files and folders) with the model file `model` on a Dask cluster.

    The cluster is `client` if given, else the scheduler at `scheduler` (tcp://host:port), else a
    LocalCluster of `workers` processes with `threads_per_worker` task threads each, on 127.0.0.1.
    Each task classifies `task_images` images (None: task_sizes() from the job and the cluster's task
    threads, shrinking towards the end) in engine runs of `batch` images, on `engine_threads` engine threads (None: the task
    thread's share of its machine's cores).
    Writes one row per image to `output` (.csv, or .jsonl for JSON lines) in input order. Returns a
    summary dict: images, errors, batches (tasks), largest_task (images), seconds, images_per_second, and
    per worker address its model loads and tasks (each worker that ran a task loads the model once).
    """
    if top < 1 or batch < 1 or (task_images is not None and task_images < 1):
        raise ValueError("top, batch and task_images must be >= 1")
    if engine_threads is not None and engine_threads < 1:
        raise ValueError("engine_threads must be >= 1 (or None: from the cores)")
    given = image_paths(inputs)
    if any("\0" in p for p in given):  # tasks carry their paths joined by NUL
        raise ValueError("an image path contains a NUL character")
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
        return _classify_on(client, given, model_path, output, engine_threads, top, batch, task_images)
    finally:
        if owned_client is not None:
            owned_client.close()
        if cluster is not None:
            cluster.close()


def _submit(client, joined, args):
    """One classify_batch task per item of `joined`. Short on purpose: Dask reads the source of the
    function that submits, on every call."""
    return client.map(classify_batch, joined, *[[a] * len(joined) for a in args], pure=False)


def _classify_on(client, given, model_path, output, engine_threads, top, batch, task_images):
    client.wait_for_workers(1)
    hosts = threads_by_host(client)
    if task_images:
        sizes = [task_images] * (len(given) // task_images) + ([len(given) % task_images] if len(given) % task_images else [])
    else:
        sizes = task_sizes(len(given), sum(hosts.values()), batch)
    tasks, first = [], 0
    for size in sizes:
        tasks.append(given[first:first + size])
        first += size
    # Enough tasks in flight to keep every task thread busy; bounded, so ten million images
    # never sit in the scheduler at once.
    window = max(8, 4 * sum(hosts.values()))
    pending = collections.deque()
    writer = _Writer(output, top)
    errors = 0
    start = time.perf_counter()
    try:
        next_task = 0
        while next_task < len(tasks) or pending:
            # Refilled half a window at a time: each submission costs the client a walk up its stack
            # (Dask records the calling code), once per call of _submit, not per task.
            if len(pending) <= window // 2 and next_task < len(tasks):
                group = tasks[next_task:next_task + window - len(pending)]
                futures = _submit(client, ["\0".join(map(os.path.abspath, paths)) for paths in group],
                                  (model_path, top, hosts, engine_threads, batch))
                pending.extend(zip(group, futures))
                next_task += len(group)
            paths, future = pending.popleft()
            for given_path, answer in zip(paths, future.result()):  # the path as the caller named it
                errors += isinstance(answer, str)
                writer.write(given_path, answer)
            future.release()
    finally:
        writer.close()
    seconds = time.perf_counter() - start
    return {
        "images": len(given),
        "errors": errors,
        "batches": len(tasks),
        "largest_task": max(sizes, default=0),
        "seconds": seconds,
        "images_per_second": len(given) / seconds if seconds > 0 else 0.0,
        "workers": client.run(worker_counts),
    }
