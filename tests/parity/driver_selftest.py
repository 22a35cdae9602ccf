#!/usr/bin/python3
"""Tests of the parity driver itself, using fake_pola.py (the reference in float32) as engine.

  /usr/bin/python3 driver_selftest.py [--workdir DIR]

A driver that always passes, or never fails on a wrong engine, is worthless; so this checks both
directions: a correct stand-in passes, stand-ins committing one trap fail and the first diverging
intermediate printed is where that trap first acts, and broken binaries are reported clearly.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

from polaformer_ref import build_model, get_config  # noqa: E402

PARITY = os.path.join(HERE, "parity.py")
FAKE = os.path.join(HERE, "fake_pola.py")


def drive(workdir, tag, pola, suite, only, trap=None):
    env = dict(os.environ)
    env.pop("FAKE_POLA_TRAP", None)
    if trap:
        env["FAKE_POLA_TRAP"] = trap
    cmd = [sys.executable, PARITY, "--pola", pola, "--suite", suite, "--only", only,
           "--workdir", os.path.join(workdir, tag)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    return proc.returncode, proc.stdout + proc.stderr


def first_shifted_softmax_block(arch):
    model = build_model(get_config(arch))
    for i, stage in enumerate(model.layers):
        for j, block in enumerate(stage.blocks):
            if block.attn_type == "S" and block.shift > 0:
                return f"layers.{i}.blocks.{j}.attn"
    raise AssertionError(f"{arch} has no shifted S block")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="pola_driver_selftest_")
    os.makedirs(workdir, exist_ok=True)

    checks = []

    def expect(name, rc_want, needles, rc, out):
        missing = [n for n in needles if n not in out]
        ok = rc == rc_want and not missing
        checks.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f": rc {rc} (want {rc_want}), "
                                                          f"missing {missing}\n{out[-3000:]}"), flush=True)

    rc, out = drive(workdir, "clean", FAKE, "fast", "reduced_swin_windows_b3")
    expect("correct stand-in passes (Swin)", 0, ["1 passed, 0 failed"], rc, out)
    rc, out = drive(workdir, "clean_pvt", FAKE, "fast", "reduced_pvt_sr_b3")
    expect("correct stand-in passes (PVT, sr > 1)", 0, ["1 passed, 0 failed"], rc, out)

    where = first_shifted_softmax_block("reduced_swin_windows")
    rc, out = drive(workdir, "no_mask", FAKE, "fast", "reduced_swin_windows_b3", trap="swin_no_shift_mask")
    expect("missing shift mask is caught and localised", 1,
           ["0 passed, 1 failed", f"first diverging intermediate: {where}"], rc, out)
    rc, out = drive(workdir, "final_norm", FAKE, "fast", "reduced_pvt_basic_b1", trap="pvt_final_norm")
    expect("PVT final norm is caught at pool", 1, ["first diverging intermediate: pool"], rc, out)
    rc, out = drive(workdir, "merge", FAKE, "fast", "reduced_swin_basic_b3", trap="swin_merge_order")
    expect("merge order is caught at the first downsample", 1,
           ["first diverging intermediate: layers.0.downsample"], rc, out)

    rc, out = drive(workdir, "mismatch_clean", FAKE, "mismatch", "swin_merge_order")
    expect("mismatch suite passes for a correct stand-in", 0, ["1 passed, 0 failed", "trap detected"], rc, out)
    rc, out = drive(workdir, "mismatch_buggy", FAKE, "mismatch", "swin_merge_order", trap="swin_merge_order")
    expect("mismatch suite fails for a stand-in committing that trap", 1,
           ["0 passed, 1 failed", "inconclusive"], rc, out)

    rc, out = drive(workdir, "missing", os.path.join(workdir, "no_such_pola"), "fast", "reduced")
    expect("missing binary: clear error, exit 2", 2, ["pola binary not found"], rc, out)
    rc, out = drive(workdir, "false", "/bin/false", "fast", "reduced_swin_basic_b1")
    expect("failing binary is reported per case", 1, ["engine failed", "exited 1"], rc, out)

    passed = sum(checks)
    print(f"{passed} passed, {len(checks) - passed} failed")
    return 0 if passed == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
