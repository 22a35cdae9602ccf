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
        answers[row["file"]] = [(t["class"], t["prob"]) for t in row["top"]]
    assert len(answers) == len(inputs) - 1
    return answers


def assert_same_as_pola(rows, inputs, pola_answers):
    assert [r["path"] for r in rows] == inputs  # input order
    for row in rows:
        if row["path"].endswith("broken.png"):
            assert row["top"] == [] and "broken.png" in row["error"]
            continue
        expected = pola_answers[row["path"]]
        assert [t[0] for t in row["top"]] == [c for c, _ in expected], row["path"]
        np.testing.assert_allclose([t[1] for t in row["top"]], [p for _, p in expected], rtol=1e-5, atol=1e-7)


def assert_loaded_once_per_worker(summary, batches):
    workers = summary["workers"]
    assert len(workers) == 2 and all(a.startswith("tcp://127.0.0.1:") for a in workers), workers
    assert sum(w["tasks"] for w in workers.values()) == batches
    for address, counts in workers.items():
        assert counts["loads"] == (1 if counts["tasks"] else 0), (address, counts)


def test_the_example_matches_pola_classify(inputs, pola_answers, pvt_path, tmp_path):
    out, summary_file = tmp_path / "labels.jsonl", tmp_path / "summary.json"
    r = subprocess.run([sys.executable, EXAMPLE, "-m", pvt_path, "-o", out, "--workers", "2", "--batch", str(BATCH),
                        "--summary-json", summary_file, *inputs], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr  # one unreadable image
    assert "300 images" not in r.stderr and "301 images" in r.stderr and "1 unreadable" in r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        row["top"] = [(t["class"], t["prob"]) for t in row["top"]]
    assert_same_as_pola(rows, inputs, pola_answers)
    summary = json.loads(summary_file.read_text())
    assert summary["images"] == 301 and summary["errors"] == 1
    assert_loaded_once_per_worker(summary, math.ceil(301 / BATCH))


def test_the_library_on_a_given_client_writes_csv(inputs, pola_answers, pvt_path, tmp_path):
    from dask.distributed import Client, LocalCluster
    from polaformer.dask import classify_files, passive_openmp_workers
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
        summary = classify_files(inputs, pvt_path, str(out), client=client, top=5, batch=BATCH)
        # a second job on the same workers loads nothing new
        again = classify_files(inputs[:40], pvt_path, str(tmp_path / "again.csv"), client=client, batch=BATCH)
        # each task's batch in 3 lanes at once (parts of 5-6 images, the bad one among them), in order
        lanes = classify_files(inputs, pvt_path, str(tmp_path / "lanes.jsonl"), client=client, batch=BATCH, lanes=3,
                               engine_threads=1)
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    rows = [{"path": t["path"], "error": t["error"],
             "top": [(t[f"class_{k}"], float(t[f"prob_{k}"])) for k in range(1, 6) if t[f"class_{k}"]]}
            for t in table]
    assert_same_as_pola(rows, inputs, pola_answers)
    assert_loaded_once_per_worker(summary, math.ceil(301 / BATCH))
    assert all(w["loads"] <= 1 for w in again["workers"].values())
    lane_rows = [json.loads(line) for line in (tmp_path / "lanes.jsonl").read_text().splitlines()]
    for row in lane_rows:
        row["top"] = [(t["class"], t["prob"]) for t in row["top"]]
    assert_same_as_pola(lane_rows, inputs, pola_answers)
    assert lanes["errors"] == 1 and all(w["loads"] <= 1 for w in lanes["workers"].values())


@pytest.mark.parametrize("share, batch, lanes, engine_threads, expected", [
    (2, 64, None, None, (2, 1)),    # a 2-core share: two one-thread lanes of 32 images
    (1, 64, None, None, (1, 1)),
    (32, 64, None, None, (8, 4)),   # lanes of at least 8 images; the rest of the share as engine threads
    (4, 8, None, None, (1, 4)),     # a small batch: one lane on the whole share
    (2, 64, None, 2, (1, 2)),       # engine_threads alone: one run on that many threads
    (2, 64, 3, None, (3, 1)),
    (8, 64, 2, 3, (2, 3)),
])
def test_lanes_and_threads(share, batch, lanes, engine_threads, expected):
    from polaformer.dask import lanes_and_threads
    assert lanes_and_threads(share, batch, lanes, engine_threads) == expected


def test_a_bad_model_fails_at_once_before_a_cluster_starts(samples, tmp_path):
    import polaformer
    from polaformer.dask import classify_files
    with pytest.raises(polaformer.InputError, match="nope.pola"):
        classify_files(samples, tmp_path / "nope.pola", str(tmp_path / "out.csv"))
