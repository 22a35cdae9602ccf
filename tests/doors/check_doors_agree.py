#!/usr/bin/python3
"""The four doors of the engine agree: `pola` (classify, run), `pola serve` (/classify, /infer),
`import polaformer` (Model.classify, Model.run) and the Dask example (examples/dask_classify.py).

Every door gets the same inputs, with `threads=0` (all cores) everywhere and one image per engine
call (`--batch 1`, `batch=1`, requests one at a time), so each image runs alone in every door:
  - good images (the shipped samples, and one at another pixel size, which every door resizes),
    a file that is not an image and a missing file, in one list: every door answers each good image
    with the same classes and class indices and the same probabilities to the last printed digit
    (the JSON doors print identical lines; Python gives the same doubles), and names each bad one
    with the same message (CLI: on stderr, exit 1; Python: InputError after the others, with
    `.results` and `.failures`; Dask: an `error` row, exit 1; the server: 400 for a bad body);
  - preprocessed tensors (`pola run`, Model.run, /infer): one at the model's size and one at another
    size the model accepts give bit-equal logits; a size the model cannot take and a tensor holding
    NaN are refused with the same message (exit 1 / InputError / 400);
  - a missing model file is refused with the same message (exit 1 for the three programs,
    InputError for Python), and so is an empty folder (CLI and Dask: exit 1);
  - `threads=0` is accepted by every door and means all cores: Python's `threads` and the CLI's
    `--verbose` report the number of cores this process may use;
  - `pola features` and Model.features give bit-equal stage maps and pooled embeddings for each
    tensor above; `pola info --json` is Model.info; `pola bench --runs 2` runs the model and names
    the same arch.

Each case runs even when an earlier one fails; cases that need the server rewritten are marked
[serve]. Exit 1 if any case failed.

  PYTHONPATH=build/python /usr/bin/python3 tests/doors/check_doors_agree.py --pola build/apps/pola \\
      --models models --source . [--model FILE [--odd-size HxW] [--refused-size HxW]]

With --model, that model file instead of the shipped Fashion-MNIST one, and generated images in
place of the shipped samples (RGB PNGs of odd, non-square pixel sizes); --odd-size adds a tensor of
that size to the tensor cases, --refused-size replaces the refused size (default: two pixels short
of the model's own on each side, which a model taking only multiples of its patch size refuses).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import traceback
import urllib.parse

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from serve_fixture import Server, infer_body, infer_logits  # noqa: E402

import polaformer  # noqa: E402

TOP = 3
FAILED = []


def case(name):
    """Runs the decorated check at once, recording (not raising) its failure so later cases still run."""
    def run(check):
        try:
            check()
            print(f"ok    {name}")
        except Exception as e:  # an AssertionError, or a door crashing in an unexpected way
            FAILED.append(name)
            detail = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
            print(f"FAIL  {name}: {detail}")
        sys.stdout.flush()
        return check
    return run


def cores():
    return len(os.sched_getaffinity(0))


def cli(args, *argv, stdin=None):
    return subprocess.run([args.pola, *map(str, argv)], input=stdin, capture_output=True, text=True, timeout=600)


def dask_example(args, *argv):
    example = os.path.join(args.source, "examples", "dask_classify.py")
    return subprocess.run([sys.executable, example, *map(str, argv)], capture_output=True, text=True, timeout=600)


def error_lines(stderr, prefix):
    return [line[len(prefix):] for line in stderr.splitlines() if line.startswith(prefix)]


def python_model(args, notes):
    """Model(path, threads=0); a refusal of threads=0 is noted (the threads case reports it) and the
    default used instead, so the other cases still test their own behaviour."""
    try:
        return polaformer.Model(args.model, threads=0)
    except polaformer.InputError as e:
        notes.append(f"Model(threads=0) raised: {e}")
        return polaformer.Model(args.model)


def generate_images(work):
    """Stand-ins for the shipped samples for a model of any channel count: seeded random RGB PNGs,
    each of an odd or non-square size (every door resizes an image to the model's input)."""
    from PIL import Image
    rng = np.random.default_rng(36)
    paths = []
    for i, (h, w) in enumerate([(37, 53), (61, 29), (41, 41), (45, 77), (23, 31), (99, 65)]):
        path = os.path.join(work, f"generated-{i}-{h}x{w}.png")
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB").save(path)
        paths.append(path)
    return paths


def parse_size(text):
    h, _, w = text.lower().partition("x")
    return int(h), int(w)


def make_inputs(args, work, samples):
    from PIL import Image
    other_size = os.path.join(work, "other-size.png")  # any image size: every door resizes it
    Image.open(samples[3]).convert("RGB").resize((45, 37)).save(other_size)
    bad = os.path.join(work, "notes.png")
    with open(bad, "w") as f:
        f.write("not an image\n")
    missing = os.path.join(work, "missing.png")
    good = samples[:3] + [other_size] + samples[3:]
    # the bad ones third and second to last: an error must name its own image, not the first
    images = good[:2] + [bad] + good[2:-1] + [missing] + good[-1:]
    return images, good, bad, missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True, help="the models/ folder (model files and samples/)")
    ap.add_argument("--source", required=True, help="the source tree (for examples/dask_classify.py)")
    ap.add_argument("--model", help="a model file (default: the shipped Fashion-MNIST one); images are then generated")
    ap.add_argument("--odd-size", type=parse_size, help="HxW: a further tensor case at this size, odd and non-square")
    ap.add_argument("--refused-size", type=parse_size, help="HxW the model cannot take (default: 2 short of its own)")
    args = ap.parse_args()
    generate = args.model is not None
    if not generate:
        args.model = os.path.join(args.models, "fashion_pola_pvt.pola")
    args.name = "fashion" if not generate else "model"  # the name the server serves it under
    notes = []
    model = python_model(args, notes)

    with tempfile.TemporaryDirectory(prefix="pola_doors_") as work:
        samples = generate_images(work) if generate else sorted(glob.glob(os.path.join(args.models, "samples", "*.png")))
        assert len(samples) >= 6, samples
        args.samples = samples
        images, good, bad, missing = make_inputs(args, work, samples)
        with Server(args.pola, ["--model", f"{args.name}={args.model}", "--threads", "0"]) as server:
            check_images(args, work, model, server, images, good, bad, missing)
            check_tensors(args, work, model, server)
        check_info_and_bench(args, model)
        check_missing_model(args, work)
        check_empty_folder(args, work)
        check_threads(args, notes)

    if FAILED:
        print(f"\n{len(FAILED)} case(s) failed: " + "; ".join(FAILED))
        sys.exit(1)
    print("\nthe doors agree")


def check_images(args, work, model, server, images, good, bad, missing):
    r = cli(args, "classify", "-m", args.model, "--json", "--top", TOP, "--batch", 1, "--threads", 0, *images)
    cli_lines = dict(zip(good, r.stdout.splitlines()))
    cli_errors = error_lines(r.stderr, "pola: error: ")
    # The agreed message for a file that cannot be classified: "<file as given>: <problem>".
    expected = {bad: f"{bad}: not an image file (unknown format)",
                missing: f"{missing}: cannot open: No such file or directory"}

    @case("cli: good images printed, each bad one named on stderr, exit 1")
    def _():
        assert r.returncode == 1, f"exit {r.returncode}\n{r.stderr}"
        assert [json.loads(line)["file"] for line in r.stdout.splitlines()] == good, r.stdout
        for path in (bad, missing):
            assert expected[path] in cli_errors, f"{expected[path]!r} not in {cli_errors}"

    py = {}
    try:
        py["results"] = model.classify(images, top=TOP, batch=1)
        py["error"] = None
    except polaformer.InputError as e:
        py["error"] = e

    @case("python: a list with bad images raises InputError after classifying the others")
    def _():
        e = py["error"]
        assert e is not None, "no exception for a list holding a bad and a missing image"
        results = getattr(e, "results", None)
        assert results is not None, f"InputError without .results (the good images are lost): {e}"
        assert [i for i, x in enumerate(results) if x is None] == [images.index(bad), images.index(missing)], results
        failures = dict(getattr(e, "failures", []))
        for path in (bad, missing):
            i = images.index(path)
            assert failures.get(i) == expected[path], f"failure of images[{i}]: {failures.get(i)!r}"
            assert f"images[{i}]: {expected[path]}" in str(e), str(e)

    @case("python = cli: same classes, class indices and probabilities (the same doubles)")
    def _():
        for path, got in zip(good, model.classify(good, top=TOP, batch=1)):
            want = json.loads(cli_lines[path])["top"]
            assert [(c, p) for c, p in got] == [(t["class"], t["prob"]) for t in want], f"{path}: {got} != {want}"
            assert [getattr(t, "index", None) for t in got] == [t["index"] for t in want], f"{path}: class indices"

    out = os.path.join(work, "dask.jsonl")
    d = dask_example(args, "-m", args.model, "-o", out, "--top", TOP, "--batch", 1, "--workers", 1,
                     "--threads-per-worker", 1, "--engine-threads", 0, *images)

    @case("dask = cli: identical JSON lines for the good images, an error row naming each bad one, exit 1")
    def _():
        assert d.returncode == 1, f"exit {d.returncode}\n{d.stderr}"
        rows = open(out).read().splitlines()
        assert len(rows) == len(images), rows
        for path, line in zip(images, rows):
            row = json.loads(line)
            assert row.get("file") == path, f"row {row} does not say file = {path}"
            if path in cli_lines:
                assert line == cli_lines[path], f"dask {line}\n  cli {cli_lines[path]}"
            else:
                assert row.get("error") == expected[path] and row.get("top") == [], f"{path}: {row}"

    @case("serve = cli: /classify answers the CLI's line; a bad image is 400 with the same problem")
    def _():
        for path in good:
            with open(path, "rb") as f:
                status, _, body = server.request(
                    "POST", f"/v2/models/{args.name}/classify?top={TOP}&file={urllib.parse.quote(path)}", f.read())
            assert status == 200 and body.decode() == cli_lines.get(path), f"{path}: {status} {body!r}"
        with open(bad, "rb") as f:
            status, _, body = server.request("POST", f"/v2/models/{args.name}/classify", f.read())
        problem = expected[bad].split(": ", 1)[1]
        assert status == 400 and problem in json.loads(body)["error"], f"bad image: {status} {body!r}"


def check_tensors(args, work, model, server):
    rng = np.random.default_rng(34)
    c, h, w = model.input_shape
    tensors = {
        "at the model's size": rng.standard_normal((2, c, h, w)).astype(np.float32),
        "at another size the model accepts": rng.standard_normal((1, c, 2 * h, 3 * w)).astype(np.float32),
    }
    if args.odd_size:
        tensors["at an odd, non-square size %dx%d" % args.odd_size] = \
            rng.standard_normal((2, c, *args.odd_size)).astype(np.float32)
    for what, x in tensors.items():
        check_features(args, work, model, what, x)
        src, dst = os.path.join(work, "x.npy"), os.path.join(work, "logits.npy")
        np.save(src, x)
        r = cli(args, "run", "-m", args.model, "-i", src, "-o", dst, "--threads", 0)
        want = np.load(dst) if r.returncode == 0 else None

        @case(f"run = python: a tensor {what}: bit-equal logits")
        def _():
            assert want is not None, r.stderr
            assert np.array_equal(model.run(x).view(np.uint32), want.view(np.uint32))

        @case(f"{'[serve] ' if 'at the model' not in what else ''}infer = run: a tensor {what}: bit-equal logits")
        def _():
            assert want is not None, r.stderr
            for i in range(len(x)):  # one image per request: each runs alone, as in `pola run`'s batch
                got = infer_logits(*server.request("POST", f"/v2/models/{args.name}/infer", *infer_body(x[i:i + 1])))
                single = x[i:i + 1]
                np.save(src, single)
                one = cli(args, "run", "-m", args.model, "-i", src, "-o", dst, "--threads", 0)
                assert one.returncode == 0, one.stderr
                assert np.array_equal(got.view(np.uint32), np.load(dst).view(np.uint32)), f"image {i}"

    x = tensors["at the model's size"]
    for what, converted in (("float64", x.astype(np.float64)), ("Fortran-order", np.asfortranarray(x))):
        src, dst = os.path.join(work, "converted.npy"), os.path.join(work, "converted_logits.npy")
        np.save(src, converted)

        @case(f"run = python: a {what} tensor is converted to float32 by both")
        def _():
            r = cli(args, "run", "-m", args.model, "-i", src, "-o", dst, "--threads", 0)
            assert r.returncode == 0, r.stderr
            assert np.array_equal(np.load(dst).view(np.uint32), model.run(converted).view(np.uint32))

    nan = np.zeros((1, c, h, w), np.float32)
    nan[0, 0, 3, 4] = np.nan
    rh, rw = args.refused_size or (h - 2, w - 2)
    refused = {f"of a size the model cannot take ({rh}x{rw})": np.zeros((1, c, rh, rw), np.float32),
               "holding NaN": nan}
    for what, x in refused.items():
        src = os.path.join(work, "refused.npy")
        np.save(src, x)
        r = cli(args, "run", "-m", args.model, "-i", src, "-o", os.path.join(work, "never.npy"))
        prefix = f"pola: error: {src}: "
        message = r.stderr.strip()[len(prefix):] if r.stderr.startswith(prefix) else None
        # What each door can do about it is its own ("or pad ... with --pad" is the CLI's option):
        # the doors agree on the problem, the message before that hint.
        if message and " (or pad " in message:
            message = message[:message.index(" (or pad ")]

        @case(f"run: a tensor {what} is refused, exit 1, naming the file and the problem")
        def _():
            assert r.returncode == 1 and message, f"exit {r.returncode}: {r.stderr}"

        @case(f"python = run: a tensor {what} raises InputError with the same message")
        def _():
            assert message, "no message from pola run"
            try:
                model.run(x)
            except polaformer.InputError as e:
                assert message in str(e), f"python {str(e)!r}\n   run {message!r}"
                return
            raise AssertionError("no exception")

        @case(f"[serve] infer = run: a tensor {what} is 400 with the same message")
        def _():
            assert message, "no message from pola run"
            status, _, body = server.request("POST", f"/v2/models/{args.name}/infer", *infer_body(x, binary=True))
            err = json.loads(body).get("error", "") if status != 200 else ""
            assert status == 400 and message in err, f"{status}: {body[:400]!r}\n  run says {message!r}"


def check_features(args, work, model, what, x):
    """The backbone door: a neck built on `pola features` output and one on Model.features must see
    the same maps, so every file the CLI writes is Python's array bit for bit (and no more or fewer)."""
    src, out = os.path.join(work, "features.npy"), os.path.join(work, "features")
    np.save(src, x)
    r = cli(args, "features", "-m", args.model, "-i", src, "-o", out, "--threads", 0)

    @case(f"features = python: a tensor {what}: bit-equal stage maps and pooled embedding")
    def _():
        assert r.returncode == 0, r.stderr
        got = model.features(x)
        files = sorted(os.listdir(out))
        assert files == sorted(f"{k}.npy" for k in got), f"cli wrote {files}, python gave {sorted(got)}"
        for k, v in got.items():
            want = np.load(os.path.join(out, f"{k}.npy"))
            assert want.shape == v.shape and np.array_equal(want.view(np.uint32), v.view(np.uint32)), k
    for f in glob.glob(os.path.join(out, "*.npy")):
        os.remove(f)


def check_info_and_bench(args, model):
    """What a model is, asked of the CLI and of Python, is one answer (both print the engine's own
    summary); `pola bench` loads and runs the same model (its timings are not comparable)."""
    r = cli(args, "info", "--json", args.model)

    @case("info = python: `pola info --json` is Model.info")
    def _():
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == model.info, f"cli {r.stdout[:400]}\n  python {str(model.info)[:400]}"
        text = cli(args, "info", args.model)
        assert text.returncode == 0 and model.info["arch"] in text.stdout, text.stdout

    b = cli(args, "bench", "-m", args.model, "--runs", 2, "--warmup", 0, "--threads", 0, "--json")

    @case("bench: `pola bench --runs 2` runs the model, names its arch, on all cores")
    def _():
        assert b.returncode == 0, b.stderr
        j = json.loads(b.stdout)
        assert (j["arch"], j["runs"], j["threads"]) == (model.info["arch"], 2, cores()), b.stdout
        assert j["median_ms"] > 0 and j["gflop_per_run"] > 0, b.stdout


def check_missing_model(args, work):
    path = os.path.join(work, "missing.pola")
    message = f"{path}: cannot open: No such file or directory"
    image = args.samples[0]

    @case("cli: a missing model is exit 1 naming it")
    def _():
        r = cli(args, "classify", "-m", path, image)
        assert r.returncode == 1 and r.stderr.strip() == f"pola: error: {message}", (r.returncode, r.stderr)

    @case("python: a missing model raises InputError with the same message")
    def _():
        try:
            polaformer.Model(path)
        except polaformer.InputError as e:
            assert str(e) == message, str(e)
            return
        raise AssertionError("no exception")

    @case("dask: a missing model is exit 1 with one line naming it (no traceback)")
    def _():
        d = dask_example(args, "-m", path, "-o", os.path.join(work, "never.csv"), image)
        assert d.returncode == 1 and d.stderr.strip() == f"dask_classify: error: {message}", (d.returncode, d.stderr)

    @case("serve: a missing model is exit 1 naming it")
    def _():
        r = subprocess.run([args.pola, "serve", "--model", f"m={path}", "--port", "1"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 1 and message in r.stderr, (r.returncode, r.stderr)


def check_empty_folder(args, work):
    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    message = f"{empty}: no image files in this directory"

    @case("cli: an empty folder is exit 1 naming it")
    def _():
        r = cli(args, "classify", "-m", args.model, empty)
        assert r.returncode == 1 and message in r.stderr, (r.returncode, r.stderr)

    @case("dask: an empty folder is exit 1 naming it")
    def _():
        d = dask_example(args, "-m", args.model, "-o", os.path.join(work, "empty.csv"), empty)
        assert d.returncode == 1 and message in d.stderr, (d.returncode, d.stderr)


def check_threads(args, notes):
    image = args.samples[0]

    @case("python: threads=0 and None mean all cores, and .threads says how many")
    def _():
        assert not notes, notes[0]
        for threads in (0, None):
            m = polaformer.Model(args.model, threads=threads)
            assert m.threads == cores(), f"Model(threads={threads}).threads = {m.threads}, cores {cores()}"

    @case("cli: --threads 0 means all cores")
    def _():
        r = cli(args, "classify", "-m", args.model, "--threads", 0, "--verbose", image)
        n = cores()
        assert r.returncode == 0 and f"{n} thread{'s' if n > 1 else ''}," in r.stderr, r.stderr


if __name__ == "__main__":
    main()
