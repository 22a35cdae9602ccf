#!/usr/bin/python3
"""`pola classify` takes files, directories and "-" (paths on stdin), and one bad image does not stop the run.

With the shipped Fashion-MNIST model and its sample PNGs, every result is compared with the
result of classifying that image alone (class indices exactly, probabilities to 1e-5):
  - a bad file among good ones: the good ones are still printed (JSON and table), the bad ones
    (not an image, missing) are each named on stderr with the problem, and the exit code is 1;
  - a directory: the image files under it, recursively, in sorted path order (other files skipped);
  - "-": the paths read from stdin, in their order;
  - an empty directory is an error naming it;
  - the progress bar appears on stderr only when stderr is a terminal and there are many images.

  /usr/bin/python3 check_classify_inputs.py --pola build/apps/pola --models models
"""
import argparse
import glob
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile

TOP = 3


def run(args, argv, stdin=None, stderr=subprocess.PIPE):
    return subprocess.run([args.pola, "classify", "-m", args.model, "--top", str(TOP), *argv], input=stdin,
                          stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=600)


def json_results(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


def same_result(got, want):
    return [t["index"] for t in got["top"]] == [t["index"] for t in want["top"]] and all(
        abs(g["prob"] - w["prob"]) < 1e-5 for g, w in zip(got["top"], want["top"]))


def check_results(what, got, files, alone):
    """`got` (JSON results) must be exactly `files`, each as classified alone."""
    assert [g["file"] for g in got] == files, f"{what}: files {[g['file'] for g in got]}, expected {files}"
    for g in got:
        key = os.path.basename(g["file"])
        assert same_result(g, alone[key]), f"{what}: {g} differs from the image alone: {alone[key]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True, help="the models/ folder (model file and samples/)")
    args = ap.parse_args()
    args.model = os.path.join(args.models, "fashion_pola_pvt.pola")
    samples = sorted(glob.glob(os.path.join(args.models, "samples", "*.png")))
    assert len(samples) >= 4, samples

    alone = {}
    for s in samples:
        r = run(args, [s, "--json"])
        assert r.returncode == 0, r.stderr
        alone[os.path.basename(s)] = json_results(r.stdout)[0]

    with tempfile.TemporaryDirectory(prefix="pola_classify_inputs_") as tmp:
        text = os.path.join(tmp, "notes.png")
        with open(text, "w") as f:
            f.write("not an image\n")
        missing = os.path.join(tmp, "missing.png")
        good = samples[:3]

        # 1. Bad files among good ones.
        r = run(args, [good[0], text, good[1], missing, good[2], "--json", "--batch", "2"])
        assert r.returncode == 1, f"exit {r.returncode}, expected 1\n{r.stderr}"
        check_results("bad file among good ones", json_results(r.stdout), good, alone)
        lines = r.stderr.splitlines()
        assert any(text in line and "not an image" in line for line in lines), r.stderr
        assert any(missing in line and "cannot open" in line for line in lines), r.stderr
        assert "internal error" not in r.stderr, r.stderr
        table = run(args, [text, *good])
        assert table.returncode == 1 and table.stdout.splitlines()[0].split() == ["IMAGE", "RANK", "PROB", "CLASS"]
        assert len(table.stdout.splitlines()) == 1 + TOP * len(good), table.stdout
        print("ok   bad files are named on stderr and skipped; good ones classified as alone; exit 1")

        # 2. A directory: images anywhere under it, sorted by path; other files skipped.
        tree = os.path.join(tmp, "tree")
        os.makedirs(os.path.join(tree, "b", "deeper"))
        os.makedirs(os.path.join(tree, "a"))
        placed = []
        for i, s in enumerate(samples):
            sub = ["a", "b", os.path.join("b", "deeper")][i % 3]
            name = os.path.basename(s)
            if i == 1:
                name = name[:-4] + ".PNG"  # extensions compare case-insensitively
            shutil.copy(s, os.path.join(tree, sub, name))
            placed.append(os.path.join(tree, sub, name))
        with open(os.path.join(tree, "a", "README.txt"), "w") as f:
            f.write("not an image, and not an image extension either\n")
        r = run(args, [tree, "--json"])
        assert r.returncode == 0, r.stderr
        got = json_results(r.stdout)
        for g in got:  # the .PNG copy is the same pixels as its .png original
            g["file"] = g["file"][:-4] + ".png" if g["file"].endswith(".PNG") else g["file"]
        expected = [p[:-4] + ".png" if p.endswith(".PNG") else p for p in sorted(placed)]
        check_results("directory", got, expected, alone)
        print(f"ok   a directory gives its {len(placed)} images, recursively, sorted, each as classified alone")

        # 3. "-": paths on stdin, one per line (blank lines skipped), in their order.
        order = [samples[2], samples[0], samples[3]]
        r = run(args, ["-", "--json"], stdin="\n".join(order[:2]) + "\n\n" + order[2] + "\n")
        assert r.returncode == 0, r.stderr
        check_results("stdin list", json_results(r.stdout), order, alone)
        print("ok   '-' reads the paths from stdin, in order")

        # 4. A directory without images is an error naming it.
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        r = run(args, [empty, samples[0], "--json"])
        assert r.returncode == 1 and empty in r.stderr and "no image files" in r.stderr, r.stderr
        check_results("empty directory", json_results(r.stdout), [samples[0]], alone)
        print("ok   a directory without images is named on stderr, the other inputs still classified")

        # 5. Progress bar: on a terminal with many images only.
        many = os.path.join(tmp, "many")
        os.makedirs(many)
        for i in range(24):
            shutil.copy(samples[i % len(samples)], os.path.join(many, f"{i:03d}_{os.path.basename(samples[i % len(samples)])}"))
        for argv, terminal, want_bar in (([many], True, True), ([many], False, False), (samples[:2], True, False)):
            if terminal:
                leader, follower = pty.openpty()
                r = run(args, [*argv, "--json"], stderr=follower)
                os.close(follower)
                err = b""
                try:
                    while chunk := os.read(leader, 65536):
                        err += chunk
                except OSError:  # EIO: the other side is closed
                    pass
                os.close(leader)
                err = err.decode(errors="replace")
            else:
                r = run(args, [*argv, "--json"])
                err = r.stderr
            assert r.returncode == 0, err
            assert len(r.stdout.splitlines()) == (24 if argv == [many] else 2), r.stdout
            assert ("img/s" in err) == want_bar, f"{argv[0]} terminal={terminal}: stderr {err!r}"
        print("ok   progress bar only on a terminal and with many images")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"FAIL: {e}")
