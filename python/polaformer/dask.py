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
oversubscribe the cores (engine_threads=None or 0: that share; as everywhere,
0 means all the cores, here shared by the machine's task threads). Results
come back in input order and are written as JSON lines, each exactly the line
`pola classify --json` prints for the image ({"file": ..., "top": [{"class",
"index", "prob"}, ...]}, the same probabilities to the last digit), or as CSV
(file, class_1, index_1, prob_1, ..., error), by the output's extension. An
image that cannot be read gets a row with its `error` ("<file>: <problem>", as
`pola classify` names it on stderr) and does not stop the run; a folder
without images is named in the summary's `failures`, as the CLI names it.

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
from polaformer import _core
from dask.distributed import Client, LocalCluster, get_worker
from distributed.comm import get_address_host

# The image files a folder stands for: those `pola classify` takes from a folder (apps/classify/image_inputs.cpp).
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".psd", ".pnm", ".pgm", ".ppm", ".pbm", ".hdr",
                    ".pic")

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
    as a list of (class, class index, probability), or the library's message (a str) if it cannot be
    read."""
    paths = joined_paths.split("\0")
    model = _worker_model(model_path, engine_threads or _core_share(threads_by_host))
    with _models_lock:
        _tasks[model_path] += 1
    try:
        ranked = model.classify(paths, top=top, batch=min(batch, len(paths)))
    except polaformer.InputError as e:  # some images could not be read: the others are classified
        ranked = getattr(e, "results", None)
        if ranked is None:
            raise
        for i, message in e.failures:
            ranked[i] = message
    return [answer if isinstance(answer, str) else [(p.class_name, p.index, p.prob) for p in answer]
            for answer in ranked]


def worker_counts():
    """On a worker: {'loads': model loads, 'tasks': batches run} in this process."""
    with _models_lock:
        return {"loads": sum(_loads.values()), "tasks": sum(_tasks.values())}


# ---- client side --------------------------------------------------------------
def image_inputs(inputs):
    """(files, problems): files as given, folders expanded to the image files under them, recursively,
    sorted by path (symbolic links to folders not followed), as `pola classify` expands its arguments;
    problems names each folder that gave none ("DIR: ...", as the CLI says it)."""
    files, problems = [], []
    for item in inputs:
        item = os.fspath(item)
        if not os.path.isdir(item):
            files.append(item)
            continue
        found, walk_errors = [], []
        for root, dirs, names in os.walk(item, onerror=walk_errors.append):
            found += [os.path.join(root, f) for f in names
                      if f.lower().endswith(IMAGE_EXTENSIONS) and os.path.isfile(os.path.join(root, f))]
        if walk_errors:
            problems.append(f"{item}: cannot read the directory: {walk_errors[0].strerror}")
        elif not found:
            problems.append(f"{item}: no image files in this directory (looked for {' '.join(IMAGE_EXTENSIONS)})")
        else:
            files += sorted(found)
    return files, problems


def image_paths(inputs):
    """The image files of image_inputs(inputs)."""
    return image_inputs(inputs)[0]


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


def _json_line(path, top, error):
    """The line `pola classify --json` prints for the image, plus its `error` if it has one."""
    try:
        for text in (path, error or "", *(c for c, _, _ in top)):
            text.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (os.fsdecode's surrogates): escaped, as json does
        row = {"file": path, "top": [{"class": c, "index": i, "prob": p} for c, i, p in top]}
        return json.dumps(dict(row, error=error) if error is not None else row, sort_keys=True, separators=(",", ":"))
    return _core._classification_json(path, top, error)


class _Writer:
    """Rows in input order. The JSON lines and the probabilities' digits come from the code that prints
    `pola classify --json` (through the binding), so both print the same text for an image."""

    def __init__(self, path, top):
        self.jsonl = path.endswith((".jsonl", ".json"))
        self.file = open(path, "w", newline="", encoding="utf-8")
        if not self.jsonl:
            self.csv = csv.writer(self.file)
            header = ["file"]
            for k in range(1, top + 1):
                header += [f"class_{k}", f"index_{k}", f"prob_{k}"]
            self.csv.writerow(header + ["error"])
        self.top = top

    def write(self, path, answer):
        """One image's row: `answer` is its top-k as (class, index, probability), or "<file>: <problem>"."""
        error = answer if isinstance(answer, str) else None
        top = [] if error is not None else answer
        if self.jsonl:
            self.file.write(_json_line(path, top, error) + "\n")
            return
        cells = [path]
        for k in range(self.top):
            cells += [top[k][0], top[k][1], _core._json_number(top[k][2])] if k < len(top) else ["", "", ""]
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
    summary dict: images, errors (images that could not be read), failures (a message for each of
    them, "<file>: <problem>", after one for each folder without images), batches (tasks),
    largest_task (images), seconds, images_per_second, and per worker address its model loads and
    tasks (each worker that ran a task loads the model once). Bad arguments and a model that cannot
    be loaded raise polaformer.InputError.
    """
    if top < 1 or batch < 1 or (task_images is not None and task_images < 1):
        raise polaformer.InputError("top, batch and task_images must be >= 1")
    if engine_threads is not None and engine_threads < 0:
        raise polaformer.InputError("engine_threads must be >= 0 (0 or None: the task thread's share of the cores)")
    given, problems = image_inputs(inputs)
    if any("\0" in p for p in given):  # tasks carry their paths joined by NUL
        raise polaformer.InputError("an image path contains a NUL character")
    model_path = os.path.abspath(os.fspath(model))
    if os.path.exists(model_path) or (client is None and not scheduler):
        polaformer.Model(model_path, threads=1)  # a bad model file fails here, once, not on every worker
    # (otherwise only the workers see the file: the first task's error names it)
    if not given:  # nothing to classify (an empty folder, say): no cluster to start
        _Writer(output, top).close()
        return {"images": 0, "errors": 0, "failures": problems, "batches": 0, "largest_task": 0, "seconds": 0.0,
                "images_per_second": 0.0, "workers": {}}
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
        summary = _classify_on(client, given, model_path, output, engine_threads, top, batch, task_images)
        summary["failures"] = problems + summary["failures"]
        return summary
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
    failures = []
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
                if isinstance(answer, str):  # the library names the worker's absolute path: name the caller's
                    absolute = os.path.abspath(given_path)
                    if answer.startswith(absolute + ": "):
                        answer = given_path + answer[len(absolute):]
                    failures.append(answer)
                writer.write(given_path, answer)
            future.release()
    finally:
        writer.close()
    seconds = time.perf_counter() - start
    return {
        "images": len(given),
        "errors": len(failures),
        "failures": failures,
        "batches": len(tasks),
        "largest_task": max(sizes, default=0),
        "seconds": seconds,
        "images_per_second": len(given) / seconds if seconds > 0 else 0.0,
        "workers": client.run(worker_counts),
    }
