"""A benchmark (not a test: timings on a shared machine are not pass/fail): times `pola convert`
on a full-size pola_swin_t checkpoint (29.3 M parameters, wrapped with AdamW state and a pickled
config, as released). Prints the converter's own phase timings and the wall time next to the time
of merely reading the checkpoint file, the CPU it ran on, and whether the work beyond reading
(check + write) met the --goal.

  /usr/bin/python3 bench/convert/convert_timing.py --pola build/apps/pola [--goal 1.0]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reference"))

from pola_config import get_config  # noqa: E402
from polaformer_ref import build_model  # noqa: E402
from save_checkpoint import save_checkpoints  # noqa: E402


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--goal", type=float, default=1.0, help="seconds aimed at for check + write")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pola_convert_timing_")
    try:
        cfg = get_config("pola_swin_t")
        ckpt = save_checkpoints(work, build_model(cfg), cfg, "pola_swin_t", ["wrapped"])[0]
        out = os.path.join(work, "pola_swin_t.pola")
        t = time.perf_counter()
        with open(ckpt, "rb") as f:
            while f.read(1 << 24):
                pass
        read_file = time.perf_counter() - t
        walls, phases = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            r = subprocess.run([args.pola, "convert", ckpt, "-o", out, "--arch", "pola_swin_t"],
                               capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            if r.returncode != 0:
                print(r.stdout + r.stderr)
                return 1
            m = re.search(r"open ([\d.]+) s, check ([\d.]+) s, read ([\d.]+) s, write ([\d.]+) s", r.stdout)
            phases.append([float(x) for x in m.groups()])
        print(r.stdout.strip())
        med = [statistics.median(p[i] for p in phases) for i in range(4)]
        print(f"checkpoint {os.path.getsize(ckpt) / 1e6:.0f} MB (with optimizer state); "
              f"plain read of the file: {read_file:.3f} s")
        print(f"pola convert pola_swin_t, median of {args.runs}: wall {statistics.median(walls):.3f} s = "
              f"open {med[0]:.3f} + check {med[1]:.3f} + read tensors {med[2]:.3f} + write {med[3]:.3f} s")
        beyond = med[1] + med[3]
        verdict = "met" if beyond < args.goal else "MISSED"
        print(f"beyond reading the checkpoint (check + write): {beyond:.3f} s (goal {args.goal} s: {verdict})")
        print(f"CPU: {cpu_model()}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
