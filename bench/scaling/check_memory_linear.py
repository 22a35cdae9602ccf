#!/usr/bin/python3
"""The activation memory a plan needs grows linearly with the input's pixels.

For a reduced PVT (with spatial reduction) and a reduced Swin (padded windows, shifted masks),
`pola_features_bench --runs 0` reports the planned arena at three square sizes, each side twice
the previous: every step must multiply it by 4 (within 10%). A quadratic term (an N x N
attention matrix, a per-size table kept per token pair) would show as a factor near 16.

  /usr/bin/python3 check_memory_linear.py --bench BUILD/bench/scaling/pola_features_bench
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))

CASES = {"reduced_pvt_sr": [64, 128, 256], "reduced_swin_windows": [96, 192, 384]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    args = ap.parse_args()
    from make_case import make_case
    from pola_config import get_config
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pola_memory_linear_") as tmp:
        for arch, sides in CASES.items():
            make_case(os.path.join(tmp, arch), get_config(arch), arch=arch, seed=3)
            arena = []
            for side in sides:
                r = subprocess.run([args.bench, "--model", os.path.join(tmp, arch, "model.pola"), "--size",
                                    f"{side}x{side}", "--threads", "1", "--runs", "0", "--warmup", "1"],
                                   capture_output=True, text=True, timeout=600)
                if r.returncode != 0:
                    sys.exit(f"FAIL: {arch} at {side}: {r.stderr}")
                arena.append(json.loads(r.stdout)["arena_mb"])
            for k in range(1, len(sides)):
                ratio = arena[k] / arena[k - 1]
                ok = 3.6 <= ratio <= 4.4
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {arch}: arena {arena[k - 1]:.2f} MB at {sides[k - 1]}^2 -> "
                      f"{arena[k]:.2f} MB at {sides[k]}^2 (x{ratio:.2f}; 4 pixels ratio)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
