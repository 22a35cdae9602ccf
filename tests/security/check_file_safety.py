#!/usr/bin/python3
"""Files are never destroyed, special files are never replaced, and nothing hangs.

- outputs: `-o` a null device works and leaves the device node as it was; `-o` a full device is an error
  naming the path (a full disk is never "success"); an output FIFO is written in place; an output
  that is the same file as an input (same path, or another name of the same inode) is refused
  before anything is read, for run, convert, preprocess, attention-map and eval --predictions, and
  the input is left byte for byte as it was;
- inputs: a FIFO given as a model, image, checkpoint or .npy is refused at once (each command runs
  under a timeout: blocking on the FIFO would hit it); `--dump-dir` naming a regular file is an
  error naming the path.
No PyTorch: the shipped model and samples are the fixtures.

  /usr/bin/python3 check_file_safety.py --pola build/apps/pola --models models
"""
import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

failures = []


def pola(args, *argv, timeout=60):
    try:
        return subprocess.run([args.pola, *argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def check(ok, label, r=None):
    print(("ok   " if ok else "FAIL ") + label)
    if not ok:
        detail = "timed out (blocked?)" if r is None else f"exit {r.returncode}; stderr: {r.stderr.strip()[:300]}"
        failures.append(f"{label}: {detail}")


def expect_error(r, label, *needles):
    ok = r is not None and r.returncode == 1 and all(n in r.stderr for n in needles) and "internal" not in r.stderr
    check(ok, label, r)


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def device_nodes(work):
    """(null, full): private device nodes when we may make them (root), so a tool that wrongly
    replaces its output can only destroy these copies; the system's nodes otherwise (then it
    cannot replace them anyway)."""
    null, full = os.path.join(work, "null"), os.path.join(work, "full")
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        return null, full
    except OSError:
        return "/dev/null", "/dev/full"


def outputs_to_devices(args, f, work):
    null, full = device_nodes(work)
    before = os.stat(null)
    r = pola(args, "run", "-m", f["model"], "-i", f["npy"], "-o", null)
    after = os.stat(null)
    check(r is not None and r.returncode == 0, "run -o NULL-DEVICE succeeds", r)
    check(stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev,
          "the null device is still the same character device afterwards")
    r = pola(args, "preprocess", "-m", f["model"], f["image"], "-o", full)
    expect_error(r, "preprocess -o FULL-DEVICE is an error naming it", full, "No space left")
    r = pola(args, "run", "-m", f["model"], "-i", f["npy"], "-o", full)
    expect_error(r, "run -o FULL-DEVICE is an error naming it", full)
    r = pola(args, "attention-map", "-m", f["model"], f["image"], "--block", "block1.0", "--query", "1,1", "-o",
             full)
    expect_error(r, "attention-map -o FULL-DEVICE is an error (write errors are not ignored)", full)
    r = pola(args, "convert", f["model"], "-o", full)
    expect_error(r, "convert -o FULL-DEVICE is an error naming it", full)


def output_to_fifo(args, f, work):
    fifo = os.path.join(work, "out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(file_bytes(fifo)))
    reader.start()
    r = pola(args, "run", "-m", f["model"], "-i", f["npy"], "-o", fifo, timeout=30)
    reader.join(timeout=30)
    check(r is not None and r.returncode == 0, "run -o FIFO succeeds", r)
    check(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still a FIFO (not replaced by a regular file)")
    check(bool(got) and got[0][:6] == b"\x93NUMPY", "the reader of the FIFO received the .npy")


def output_is_input(args, f, work):
    npy = os.path.join(work, "in.npy")
    shutil.copy(f["npy"], npy)
    link = os.path.join(work, "in_link.npy")
    os.link(npy, link)
    model = os.path.join(work, "model.pola")
    shutil.copy(f["model"], model)
    image = os.path.join(work, "image.png")
    shutil.copy(f["image"], image)
    originals = {p: file_bytes(p) for p in (npy, model, image)}
    cases = [
        ("run -o the input .npy", ["run", "-m", model, "-i", npy, "-o", npy], npy),
        ("run -o a hard link to the input", ["run", "-m", model, "-i", npy, "-o", link], link),
        ("run -o the model", ["run", "-m", model, "-i", npy, "-o", model], model),
        ("convert -o its input", ["convert", model, "-o", model], model),
        ("preprocess -o its image", ["preprocess", "-m", model, image, "-o", image], image),
        ("attention-map -o its image",
         ["attention-map", "-m", model, image, "--block", "block1.0", "--query", "1,1", "-o", image], image),
        ("attention-map --npy the model",
         ["attention-map", "-m", model, image, "--block", "block1.0", "--query", "1,1", "-o",
          os.path.join(work, "map.png"), "--npy", model], model),
        ("eval --predictions the model",
         ["eval", "-m", model, "-d", args.fashion, "--limit", "10", "--predictions", model], model),
    ]
    for label, argv, named in cases:
        if argv[0] == "eval" and not os.path.isdir(args.fashion):
            continue
        r = pola(args, *argv)
        expect_error(r, f"{label}: refused", named, "destroy the input")
        intact = all(file_bytes(p) == b for p, b in originals.items())
        check(intact, f"{label}: every input is unchanged")


def fifo_inputs(args, f, work):
    fifo = os.path.join(work, "in.fifo")
    os.mkfifo(fifo)
    cases = [
        ("info with a FIFO as the model", ["info", fifo]),
        ("classify with a FIFO as the model", ["classify", "-m", fifo, f["image"]]),
        ("classify with a FIFO as an image", ["classify", "-m", f["model"], fifo]),
        ("preprocess with a FIFO as the image", ["preprocess", "-m", f["model"], fifo, "-o",
                                                  os.path.join(work, "p.npy")]),
        ("run with a FIFO as the input", ["run", "-m", f["model"], "-i", fifo, "-o", os.path.join(work, "o.npy")]),
        ("convert with a FIFO as the checkpoint", ["convert", fifo, "-o", os.path.join(work, "c.pola")]),
    ]
    for label, argv in cases:
        r = pola(args, *argv, timeout=20)
        expect_error(r, f"{label}: refused at once, naming it", fifo, "FIFO")


def dump_dir_is_a_file(args, f, work):
    plain = os.path.join(work, "plain.txt")
    with open(plain, "w") as out:
        out.write("not a directory\n")
    r = pola(args, "run", "-m", f["model"], "-i", f["npy"], "-o", os.path.join(work, "l.npy"), "--dump-dir", plain)
    expect_error(r, "--dump-dir naming a regular file: an error naming the path", plain, "--dump-dir")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pola_file_safety_") as work:
        f = {"model": os.path.join(args.models, "fashion_pola_pvt.pola"),
             "image": os.path.join(args.models, "samples", "0002_trouser.png"),
             "npy": os.path.join(work, "x.npy")}
        r = pola(args, "preprocess", "-m", f["model"], f["image"], "-o", f["npy"])
        if r is None or r.returncode != 0:
            sys.exit(f"cannot make the input fixture: {r.stderr if r else 'timeout'}")
        outputs_to_devices(args, f, work)
        output_to_fifo(args, f, work)
        output_is_input(args, f, work)
        fifo_inputs(args, f, work)
        dump_dir_is_a_file(args, f, work)
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("all file-safety checks passed")


if __name__ == "__main__":
    main()
