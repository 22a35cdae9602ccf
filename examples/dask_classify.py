#!/usr/bin/python3
"""Classify a folder (or a list) of images on a Dask cluster with a PolaFormer model.

    # a LocalCluster of 2 worker processes on this machine (the default)
    dask_classify.py -m models/fashion_pola_pvt.pola -o labels.csv photos/
    # a running cluster (dask-scheduler + dask-worker on each machine)
    dask_classify.py -m /shared/model.pola -o labels.jsonl --scheduler tcp://10.0.0.5:8786 /shared/photos

Writes one row per image in input order (CSV, or JSON lines for .jsonl: the
lines `pola classify --json` prints) and prints a summary on stderr: images/s
and each worker's model-load count (1). As `pola classify`, it names each
image or folder it cannot use on stderr ("dask_classify: error: <file>:
<problem>") and goes on with the others; the exit code is 0 when every input
was classified, 1 when an input or argument is wrong (a bad model: one line,
no traceback), 2 on an internal error. polaformer.dask does the work;
README.md ("Many images on a Dask cluster") says what to install where.
"""
import argparse
import json
import sys

import polaformer
from polaformer.dask import classify_files

PROGRAM = "dask_classify"


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # a wrong argument is a wrong input: exit 1, as `pola`
        self.print_usage(sys.stderr)
        self.exit(1, f"{PROGRAM}: error: {message}\n")


def fail(message, code=1):
    print(f"{PROGRAM}: {'error' if code == 1 else 'internal error'}: {message}", file=sys.stderr)
    return code


def main():
    ap = ArgumentParser(prog=PROGRAM, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="image files and folders (searched recursively, sorted)")
    ap.add_argument("-m", "--model", required=True, help="model file (.pola); the same path on every worker")
    ap.add_argument("-o", "--output", required=True, help="result file: .csv, or .jsonl for JSON lines")
    ap.add_argument("--list", help="a file of image paths, one per line, read after the inputs")
    ap.add_argument("--scheduler", help="address of a running scheduler (tcp://host:8786); default: a LocalCluster")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    ap.add_argument("--threads-per-worker", type=int, default=1, help="LocalCluster task threads per worker (default 1)")
    ap.add_argument("--engine-threads", type=int, default=0,
                    help="engine threads per task (default 0: all of its machine's cores, shared by the task threads "
                         "of the workers there)")
    ap.add_argument("--top", type=int, default=5, help="classes per image (default 5)")
    ap.add_argument("--batch", type=int, default=64, help="images per engine run (default 64)")
    ap.add_argument("--task-images", type=int, default=0,
                    help="images per Dask task (default 0: about 8 tasks per task thread, at most 1024 images)")
    ap.add_argument("--summary-json", help="also write the summary as JSON to this file")
    a = ap.parse_args()
    inputs = list(a.inputs)
    try:
        if a.list:
            with open(a.list, encoding="utf-8") as f:
                inputs += [line.rstrip("\n") for line in f if line.strip()]
        if not inputs:
            ap.error("no images given (pass files or folders, or --list FILE)")
        summary = classify_files(inputs, a.model, a.output, scheduler=a.scheduler, workers=a.workers,
                                 threads_per_worker=a.threads_per_worker, engine_threads=a.engine_threads,
                                 top=a.top, batch=a.batch, task_images=a.task_images or None)
    except polaformer.InputError as e:  # the message names the file or argument and the problem
        return fail(e)
    except OSError as e:  # the list or the output file
        return fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else e)
    except Exception as e:  # noqa: BLE001 (a bug, or the cluster failing: one line, as `pola` says it)
        return fail(f"{type(e).__name__}: {e}", code=2)
    for message in summary["failures"]:
        print(f"{PROGRAM}: error: {message}", file=sys.stderr)
    print(f"dask_classify: {summary['images']} images in {summary['seconds']:.2f} s "
          f"({summary['images_per_second']:.1f} images/s, {summary['batches']} tasks of up to {summary['largest_task']}), "
          f"{summary['errors']} unreadable; -> {a.output}",
          file=sys.stderr)
    for address, counts in sorted(summary["workers"].items()):
        print(f"  worker {address}: model loaded {counts['loads']} time(s), {counts['tasks']} batches", file=sys.stderr)
    if a.summary_json:
        with open(a.summary_json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
