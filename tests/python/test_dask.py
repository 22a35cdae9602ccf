"""examples/dask_classify.py on a LocalCluster of 2 worker processes bound to 127.0.0.1, over 300
Fashion-MNIST test images (and one unreadable file): every prediction equals `pola classify`'s, the
output keeps the input order, and each worker process loaded the model exactly once."""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import SOURCE, pola

EXAMPLE = os.path.join(SOURCE, "examples", "dask_classify.py")
BATCH = 16


@pytest.fixture(scope="module")
def inputs(fashion_pngs, tmp_path_factory):
    paths, _ = fashion_pngs
    bad = tmp_path_factory.mktemp("bad") / "broken.png"
    bad.write_text("not an image")
    return paths[:150] + [str(bad)] + paths[150:]


@pytest.fixture(scope="module")
def pola_answers(inputs, pvt_path):
    r = subprocess.run([os.environ.get("POLA_BIN"), "classify", "-m", pvt_path, "--top", "5", "--batch", str(BATCH),
                        "--json", "-"], input="\n".join(inputs), capture_output=True, text=True)
    assert r.returncode == 1 and "broken.png" in r.stderr  # the bad file is named, the others classified
    answers = {}
    for line in r.stdout.splitlines():
        row = json.loads(line)
        answers[row["file"]] = [(t["class"], t["index"], t["prob"]) for t in row["top"]]
    assert len(answers) == len(inputs) - 1
    return answers


def assert_same_as_pola(rows, inputs, pola_answers):
    """`rows`: {"file", "error", "top": [(class, index, prob)]} in the order written."""
    assert [r["file"] for r in rows] == inputs  # input order
    for row in rows:
        if row["file"].endswith("broken.png"):
            assert row["top"] == [] and row["error"] == f"{row['file']}: not an image file (unknown format)", row
            continue
        expected = pola_answers[row["file"]]
        assert [t[:2] for t in row["top"]] == [t[:2] for t in expected], row["file"]
        np.testing.assert_allclose([t[2] for t in row["top"]], [t[2] for t in expected], rtol=1e-5, atol=1e-7)


def json_rows(path):
    """The rows of a JSON-lines output, which has the keys of `pola classify --json` (and `error`)."""
    rows = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert set(row) <= {"file", "top", "error"} and all(set(t) == {"class", "index", "prob"} for t in row["top"]), row
        rows.append({"file": row["file"], "error": row.get("error"),
                     "top": [(t["class"], t["index"], t["prob"]) for t in row["top"]]})
    return rows


def assert_loaded_once_per_worker(summary, batches):
    workers = summary["workers"]
    assert len(workers) == 2 and all(a.startswith("tcp://127.0.0.1:") for a in workers), workers
    assert sum(w["tasks"] for w in workers.values()) == batches
    for address, counts in workers.items():
        assert counts["loads"] == (1 if counts["tasks"] else 0), (address, counts)


def test_the_example_matches_pola_classify(inputs, pola_answers, pvt_path, tmp_path):
    out, summary_file = tmp_path / "labels.jsonl", tmp_path / "summary.json"
    r = subprocess.run([sys.executable, EXAMPLE, "-m", pvt_path, "-o", out, "--workers", "2", "--batch", str(BATCH),
                        "--task-images", str(3 * BATCH), "--summary-json", summary_file, *inputs], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr  # one unreadable image
    assert "300 images" not in r.stderr and "301 images" in r.stderr and "1 unreadable" in r.stderr
    assert_same_as_pola(json_rows(out), inputs, pola_answers)
    summary = json.loads(summary_file.read_text())
    assert summary["images"] == 301 and summary["errors"] == 1
    assert_loaded_once_per_worker(summary, math.ceil(301 / (3 * BATCH)))


def test_the_library_on_a_given_client_writes_csv(inputs, pola_answers, pvt_path, tmp_path):
    from dask.distributed import Client, LocalCluster
    from polaformer.dask import classify_files, passive_openmp_workers, task_sizes
    # the caller's value wins (read now: starting workers puts the pre-spawn value into this process too)
    policy = b"OMP_WAIT_POLICY=" + os.environ.get("OMP_WAIT_POLICY", "passive").encode()
    with passive_openmp_workers():
        cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
                               dashboard_address=None)
    with cluster, Client(cluster) as client:
        # in the environment the worker processes started with (OpenMP reads it when it loads)
        started_with = client.run(lambda: open("/proc/self/environ", "rb").read().split(b"\0"))
        assert all(policy in env for env in started_with.values()), started_with
        out = tmp_path / "labels.csv"
        summary = classify_files(inputs, pvt_path, str(out), client=client, top=5, batch=BATCH)  # default task size
        # a second job on the same workers loads nothing new
        again = classify_files(inputs[:40], pvt_path, str(tmp_path / "again.csv"), client=client, batch=BATCH)
        # tasks of 50 images (3 engine runs of 16 and one of 2, the bad image in a run of 16), each on
        # an OpenMP team of 2
        team = classify_files(inputs, pvt_path, str(tmp_path / "team.jsonl"), client=client, batch=BATCH,
                              task_images=50, engine_threads=2)
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    rows = [{"file": t["file"], "error": t["error"],
             "top": [(t[f"class_{k}"], int(t[f"index_{k}"]), float(t[f"prob_{k}"])) for k in range(1, 6) if t[f"class_{k}"]]}
            for t in table]
    assert_same_as_pola(rows, inputs, pola_answers)
    assert_loaded_once_per_worker(summary, len(task_sizes(301, 4, BATCH)))  # 4 task threads
    assert all(w["loads"] <= 1 for w in again["workers"].values())
    assert_same_as_pola(json_rows(tmp_path / "team.jsonl"), inputs, pola_answers)
    assert team["errors"] == 1 and team["batches"] == 7
    # a model of 2 engine threads beside each worker's first one (of 1), each loaded at most once
    assert all(w["loads"] <= 2 for w in team["workers"].values())


@pytest.mark.parametrize("images, task_threads, batch", [
    (10000, 2, 64), (301, 4, 16), (100, 8, 64), (10**6, 16, 64), (10**5, 1, 2048), (5, 2, 64), (0, 2, 64)])
def test_task_sizes(images, task_threads, batch):
    from polaformer.dask import MAX_TASK_IMAGES, task_sizes
    sizes = task_sizes(images, task_threads, batch)
    assert sum(sizes) == images and all(s > 0 for s in sizes)
    assert sizes == sorted(sizes, reverse=True)                       # shrinking towards the end
    assert all(s % batch == 0 for s in sizes[:-1])                    # whole engine batches but the last
    assert all(s <= max(batch, MAX_TASK_IMAGES) for s in sizes)
    remaining = images
    for s in sizes[:-1]:  # at most the remaining images / (2 x threads), rounded up to whole batches
        share = math.ceil(remaining / (2 * task_threads))
        assert s <= max(batch, math.ceil(share / batch) * batch)
        remaining -= s


def test_task_sizes_of_the_benchmark():
    from polaformer.dask import task_sizes
    assert task_sizes(10000, 2, 64) == [1024] * 7 + [768, 576, 384, 320, 256, 192, 128, 64, 64, 64, 16]


def test_a_bad_model_fails_at_once_before_a_cluster_starts(samples, tmp_path):
    import polaformer
    from polaformer.dask import classify_files
    with pytest.raises(polaformer.InputError, match="nope.pola"):
        classify_files(samples, tmp_path / "nope.pola", str(tmp_path / "out.csv"))


def run_example(*argv):
    return subprocess.run([sys.executable, EXAMPLE, *map(str, argv)], capture_output=True, text=True, timeout=600)


def test_the_example_names_a_bad_model_in_one_line(samples, tmp_path):
    # as `pola classify`: "<program>: error: <file>: <problem>", exit code 1, no traceback
    r = run_example("-m", tmp_path / "nope.pola", "-o", tmp_path / "out.csv", *samples)
    assert (r.returncode, r.stderr) == (1, f"dask_classify: error: {tmp_path / 'nope.pola'}: cannot open: No such file or directory\n")
    r = run_example("-m", samples[0], "-o", tmp_path / "out.csv", *samples)
    assert r.returncode == 1 and r.stderr.startswith(f"dask_classify: error: {samples[0]}: this is a PNG image"), r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_the_example_fails_on_an_empty_folder(pvt_path, samples, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_example("-m", pvt_path, "-o", tmp_path / "out.csv", empty)
    assert r.returncode == 1 and f"dask_classify: error: {empty}: no image files in this directory" in r.stderr, r.stderr
    # beside images, it is named and the others are still classified (as `pola classify`)
    r = run_example("-m", pvt_path, "-o", tmp_path / "out.jsonl", "--workers", 1, empty, samples[0])
    assert r.returncode == 1 and f"{empty}: no image files in this directory" in r.stderr, r.stderr
    assert [row["file"] for row in json_rows(tmp_path / "out.jsonl")] == [samples[0]]


def test_each_error_names_its_own_image(pvt_path, samples, tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_text("not an image")
    missing = tmp_path / "missing.png"
    r = run_example("-m", pvt_path, "-o", tmp_path / "out.jsonl", "--workers", 1, samples[0], samples[1], bad,
                    samples[2], missing)
    assert r.returncode == 1, r.stderr
    errors = [json.loads(line).get("error") for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert errors == [None, None, f"{bad}: not an image file (unknown format)", None,
                      f"{missing}: cannot open: No such file or directory"]
