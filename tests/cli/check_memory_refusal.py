#!/usr/bin/python3
"""A size or batch the machine cannot hold is refused before anything is allocated.

With the shipped Fashion-MNIST PVT (32x32 inputs; a 2048x2048 image needs ~0.3 GiB) and
POLA_MEMORY_LIMIT_BYTES standing in for a small machine:
  - `pola run` on a 2048x2048 .npy, `pola features` on it and `pola classify --batch 2000` exit 1
    with "pola: error: ... needs <X> (the plan's working memory ... plus inputs and outputs ...);
    64.0 MiB is available (POLA_MEMORY_LIMIT_BYTES)", write nothing, and their peak resident
    memory stays within 32 MiB of a tiny run's (the .npy's data is not even read);
  - under an address-space limit (RLIMIT_AS, as `ulimit -v` sets) and no override, a 4096x4096
    run is refused the same way, naming that limit, instead of ending in "internal error: out of
    memory" (exit 2);
  - the need printed is what the check uses: with the limit 2% above it the same run goes
    through and gives the logits of a run without a limit; 2% below it, it is refused;
  - a limit that is not a number is named.

  /usr/bin/python3 check_memory_refusal.py --pola build/apps/pola --models models
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

import numpy as np

LIMIT = 64 << 20
MAX_GROWTH_KIB = 32 * 1024
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what + (f"\n    {detail}" if detail else ""))
    return bool(cond)


class Run:
    def __init__(self, returncode, stdout, stderr, peak_kib):
        self.returncode, self.stdout, self.stderr, self.peak_kib = returncode, stdout, stderr, peak_kib

    def __str__(self):
        return f"exit {self.returncode}, peak RSS {self.peak_kib} KiB\n    stdout: {self.stdout.strip()[:300]}\n" \
               f"    stderr: {self.stderr.strip()[:500]}"


def run(args, argv, limit=None, address_space=None, stdin=None):
    """Runs `pola argv`; returns its exit code, output and peak resident memory (wait4's rusage of that
    process alone). limit: POLA_MEMORY_LIMIT_BYTES; address_space: an RLIMIT_AS for the child."""
    env = {k: v for k, v in os.environ.items() if k != "POLA_MEMORY_LIMIT_BYTES"}
    if limit is not None:
        env["POLA_MEMORY_LIMIT_BYTES"] = str(limit)

    def child_limits():
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.TemporaryFile("w+") as inp:
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        p = subprocess.Popen([args.pola, *map(str, argv)], stdin=inp, stdout=out, stderr=err, env=env,
                             preexec_fn=child_limits)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(p.returncode, out.read(), err.read(), usage.ru_maxrss)


def need_bytes(stderr):
    m = re.search(r"needs ([0-9.]+) (bytes|KiB|MiB|GiB|TiB) ", stderr)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


AMOUNT = r"[0-9.]+ (?:bytes|[KMGT]iB)"


def refused(r, shape, available=r"64\.0 MiB is available \(POLA_MEMORY_LIMIT_BYTES\)"):
    return r.returncode == 1 and "internal error" not in r.stderr and re.search(
        r"pola: error: .*" + re.escape(shape) + " needs " + AMOUNT + r" \(the plan's working memory " + AMOUNT +
        " plus inputs and outputs " + AMOUNT + r"\); " + available, r.stderr) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    model = os.path.join(args.models, "fashion_pola_pvt.pola")
    sample = os.path.join(args.models, "samples", "0000_ankle-boot.png")
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory(prefix="pola_memory_") as work:
        tiny = os.path.join(work, "tiny.npy")
        np.save(tiny, rng.standard_normal((1, 1, 32, 32)).astype(np.float32))
        big = os.path.join(work, "big.npy")
        np.save(big, rng.standard_normal((1, 1, 2048, 2048)).astype(np.float32))
        out = os.path.join(work, "logits.npy")

        base = run(args, ["run", "-m", model, "-i", tiny, "-o", out, "-t", "1"])
        check(base.returncode == 0, "a tiny run works", str(base))

        r = run(args, ["run", "-m", model, "-i", big, "-o", out, "-t", "1"], limit=LIMIT)
        check(refused(r, "a batch of 1 image of 2048x2048"), "pola run: a 2048x2048 image over 64 MiB is refused",
              str(r))
        check(big in r.stderr, "pola run: the refusal names the input file", str(r))
        check(r.peak_kib - base.peak_kib < MAX_GROWTH_KIB,
              f"pola run: nothing allocated ({r.peak_kib} KiB peak, a tiny run {base.peak_kib} KiB)", str(r))
        need = need_bytes(r.stderr)

        feats = os.path.join(work, "features")
        r = run(args, ["features", "-m", model, "-i", big, "-o", feats, "--stages", "1", "-t", "1"], limit=LIMIT)
        check(refused(r, "a batch of 1 image of 2048x2048"), "pola features: refused the same way", str(r))
        check(not os.path.exists(os.path.join(feats, "stage1.npy")), "pola features: nothing written")
        check(r.peak_kib - base.peak_kib < MAX_GROWTH_KIB, "pola features: nothing allocated", str(r))

        r = run(args, ["classify", "-m", model, "--batch", "2000", "-t", "1", "-"], limit=LIMIT,
                stdin=(sample + "\n") * 2000)
        check(refused(r, "a batch of 2000 images of 32x32"), "pola classify --batch 2000 over 64 MiB is refused", str(r))
        check(r.stdout == "", "pola classify: no results printed", str(r))
        check(r.peak_kib - base.peak_kib < MAX_GROWTH_KIB, "pola classify: nothing allocated", str(r))

        # No override: the process's own address-space limit is what is available.
        huge = os.path.join(work, "huge.npy")
        np.save(huge, np.zeros((1, 1, 4096, 4096), np.float32))
        r = run(args, ["run", "-m", model, "-i", huge, "-o", out, "-t", "1"], address_space=1 << 30)
        check(refused(r, "a batch of 1 image of 4096x4096", r"[0-9.]+ [KMG]iB is available \(the address-space limit "
                                                           r"\(RLIMIT_AS, ulimit -v\)"),
              "pola run: 4096x4096 under a 1 GiB RLIMIT_AS is refused naming the limit", str(r))

        # The printed need is what the check uses, within its rounding (3 digits).
        if check(need is not None, f"the refusal states the need ({need} bytes)"):
            want = run(args, ["run", "-m", model, "-i", big, "-o", out, "-t", "1"])
            check(want.returncode == 0, "2048x2048 runs without a limit", str(want))
            expected = np.load(out)
            os.remove(out)
            r = run(args, ["run", "-m", model, "-i", big, "-o", out, "-t", "1"], limit=int(need * 1.02))
            check(r.returncode == 0 and np.array_equal(np.load(out), expected),
                  "with the limit 2% above the need it runs, with the same logits", str(r))
            r = run(args, ["run", "-m", model, "-i", big, "-o", out, "-t", "1"], limit=int(need * 0.98))
            check(r.returncode == 1 and "needs" in r.stderr, "2% below the need it is refused", str(r))

        r = run(args, ["run", "-m", model, "-i", tiny, "-o", out], limit="64M")
        check(r.returncode == 1 and "POLA_MEMORY_LIMIT_BYTES='64M' is not a number of bytes" in r.stderr,
              "a limit that is not a number is named", str(r))

    if failures:
        print(f"\n{len(failures)} failure(s):\n" + "\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
