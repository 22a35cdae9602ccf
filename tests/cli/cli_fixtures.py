"""What the CLI checks (check_*.py) share: running `pola` and recording checks, and the files
they feed it (a small model made by the PyTorch reference, a photo, and the kinds of wrong file
users pass by mistake)."""
import argparse
import contextlib
import os
import subprocess
import sys
import tempfile

import numpy as np

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")
sys.path.insert(0, REFERENCE)

# ---- running `pola` and recording checks --------------------------------------------------
failures = []  # every failed check(), for exit_status()


def pola(args, *argv, timeout=600, env=None):
    """Runs the tool under test (args.pola) with argv; returns the CompletedProcess (text), whatever
    it exits with. env: variables added to this process's environment."""
    return subprocess.run([args.pola, *map(str, argv)], capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def pola_ok(args, *argv, expect=0, timeout=600):
    """As pola(), but stops the whole check with a FAIL message unless the exit code is `expect`."""
    r = pola(args, *argv, timeout=timeout)
    if r.returncode != expect:
        sys.exit(f"FAIL: pola {' '.join(map(str, argv))}: exit {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    return r


def check(cond, what, detail=""):
    """Prints 'ok' or 'FAIL' and `what`; a failure is kept (with `detail`) for exit_status()."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what + (f"\n    {detail}" if detail else ""))
    return bool(cond)


def process_detail(r):
    """A finished `pola` run for a failure message: exit code and the start of stdout and stderr."""
    return f"exit {r.returncode}\n    stdout: {r.stdout.strip()[:400]}\n    stderr: {r.stderr.strip()[:400]}"


def exit_status():
    """0 when every check passed; else prints the failures and returns 1."""
    if not failures:
        return 0
    print(f"\n{len(failures)} failure(s):\n" + "\n".join(failures))
    return 1


# ---- fixture files --------------------------------------------------------------------------
def reference_case(work, arch, seed=3, batch=2):
    """A random-weight `arch` made by the PyTorch reference (make_case.py) in work/arch: returns the
    model file, the input .npy and the float64 reference's logits."""
    case = os.path.join(work, arch)
    subprocess.run(["/usr/bin/python3", os.path.join(REFERENCE, "make_case.py"), "--arch", arch, "--seed", str(seed),
                    "--batch", str(batch), "--out", case], check=True, capture_output=True)
    return os.path.join(case, "model.pola"), os.path.join(case, "input.npy"), np.load(os.path.join(case, "logits.npy"))


@contextlib.contextmanager
def fixture_work(prefix):
    """The usual start of a check: parses --pola (the tool) and --keep DIR, makes the fixture files
    in a work folder (a temporary one removed afterwards, or DIR, kept); yields (args, work, files)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        yield args, work, make_fixtures(work)


# A 3-channel 72 x 72 PVT with spatial reduction (21 classes): small, and its
# preprocess metadata is usable for images.
FIXTURE_ARCH = "reduced_pvt_sr"


def make_fixtures(work, seed=11):
    from make_case import make_case
    from pola_config import get_config
    import skimage.data
    import skimage.io

    os.makedirs(work, exist_ok=True)
    make_case(os.path.join(work, "case"), get_config(FIXTURE_ARCH), arch=FIXTURE_ARCH, seed=seed, batch=2)
    f = {
        "model": os.path.join(work, "case", "model.pola"),
        "input": os.path.join(work, "case", "input.npy"),
        "logits": os.path.join(work, "case", "logits.npy"),
        "photo": os.path.join(work, "chelsea.png"),
        "photo2": os.path.join(work, "astronaut.jpg"),
        "missing": os.path.join(work, "no_such_file.png"),
        "random": os.path.join(work, "random_bytes.pola"),
        "text": os.path.join(work, "notes.txt"),
        "wrong_shape": os.path.join(work, "wrong_shape.npy"),
    }
    skimage.io.imsave(f["photo"], skimage.data.chelsea(), check_contrast=False)
    skimage.io.imsave(f["photo2"], skimage.data.astronaut(), check_contrast=False)
    with open(f["random"], "wb") as out:
        out.write(np.random.default_rng(seed).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with open(f["text"], "w") as out:
        out.write("not an image\n")
    np.save(f["wrong_shape"], np.zeros((1, 3, 10, 10), np.float32))
    return f
