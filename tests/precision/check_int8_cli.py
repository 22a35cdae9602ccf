#!/usr/bin/python3
"""`pola quantize` and `--precision int8` through the CLI: what is made, what runs, what is refused.

  check_int8_cli.py --pola build/apps/pola --model models/fashion_pola_pvt.pola --workdir DIR

- `pola quantize` on a .npy calibration batch writes a file whose linear layers are I8 with their
  scales (`pola info --json`), patch embeddings and the head left float; it runs at fp32 and int8;
- int8 logits are close to fp32's (a loose sanity bound; accuracy is precision.int8_fashion's)
  but not equal to them (int8 arithmetic ran), and `bench --profile` shows int8 GEMM nodes and a
  fp32 head;
- `--precision auto` on the quantized file runs exactly int8 where the CPU has int8 dot products,
  and runs (in float) where it has none;
- refused, exit 1, with a message naming the problem: int8 on a float file ("quantize it first"),
  int8 where the CPU has no AMX-INT8 or VNNI (emulated with POLA_ISA=scalar) on run, classify,
  eval and bench; quantizing an int8 file; a missing calibration source; the output = the input.
Where the CPU has no int8 dot products only the refusals and the file checks run.
"""
import argparse
import json
import os
import sys

import numpy as np

from precision_common import native_int8, pola


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    failures = []
    info = json.loads(pola(args.pola, "info", "--json", args.model).stdout)
    cfg = info["config"]
    rng = np.random.default_rng(23)
    calib = os.path.join(args.workdir, "calibration.npy")
    np.save(calib, rng.standard_normal((6, cfg["in_chans"], cfg["img_size"], cfg["img_size"])).astype(np.float32))
    inp = os.path.join(args.workdir, "input.npy")
    np.save(inp, rng.standard_normal((3, cfg["in_chans"], cfg["img_size"], cfg["img_size"])).astype(np.float32))
    q = os.path.join(args.workdir, "model.int8.pola")
    out = os.path.join(args.workdir, "out.npy")

    made = pola(args.pola, "quantize", "-m", args.model, "--calibration", calib, "-o", q, "--batch", "4")
    print(made.stdout.strip())
    qinfo = json.loads(pola(args.pola, "info", "--json", q).stdout)
    with open(q, "rb") as f:  # the header, read independently of the engine
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    i8 = sorted(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "I8")
    if not i8 or any(not k.endswith(".weight") for k in i8):
        failures.append(f"the int8 file's I8 tensors are {i8[:5]}")
    for k in i8:
        p = k[: -len(".weight")]
        if header.get(k + "_scale", {}).get("shape") != [header[k]["shape"][0]]:
            failures.append(f"{k}: no per-channel scale")
        if header.get(p + ".input_scale", {}).get("shape") != [1]:
            failures.append(f"{k}: no input scale")
    kept = [k for k in ("head.weight",) if header.get(k, {}).get("dtype") == "I8"]
    kept += [k for k in header if "patch_embed" in k and header[k].get("dtype") == "I8"]
    if kept:
        failures.append(f"quantized what must stay float: {kept}")
    if "quantization" not in header.get("__metadata__", {}):
        failures.append("no `quantization` metadata")
    print(f"{len(i8)} I8 weights; metadata: {header.get('__metadata__', {}).get('quantization')}")

    pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out)
    fp32 = np.load(out)
    pola(args.pola, "run", "-m", q, "-i", inp, "-o", out)
    deq = np.load(out)
    if not np.all(np.isfinite(deq)) or np.abs(deq - fp32).max() > 0.1 * np.abs(fp32).max():
        failures.append(f"fp32 run of the int8 file is far from the float file's: {np.abs(deq - fp32).max()}")

    isa = native_int8(args.pola)
    print(f"int8 instructions here: {isa}")
    if isa != "none":
        pola(args.pola, "run", "-m", q, "-i", inp, "-o", out, "--precision", "int8")
        int8 = np.load(out)
        err = np.abs(int8 - fp32).max() / np.abs(fp32).max()
        print(f"int8 vs fp32: {err:.3e} of max|logit|; top-1 agree {np.mean(int8.argmax(1) == fp32.argmax(1)):.2f}")
        if not np.all(np.isfinite(int8)) or err > 0.1:
            failures.append(f"int8 logits {err:.3e} of max|logit| from fp32")
        if np.array_equal(int8, deq):
            failures.append("--precision int8 gives the fp32 run's logits: int8 arithmetic did not run")
        pola(args.pola, "run", "-m", q, "-i", inp, "-o", out, "--precision", "auto")
        if not np.array_equal(np.load(out), int8):
            failures.append("--precision auto on the int8 file does not run int8")
        bench = json.loads(pola(args.pola, "bench", "-m", q, "--precision", "int8", "--profile", "--json",
                                "--runs", "1", "--warmup", "0").stdout)
        prec = {}
        for node in bench["profile"]:
            prec.setdefault(node["node"], node["precision"])
        gemms = {v for k, v in prec.items() if k.endswith((".proj", ".fc1", ".mlp.fc1")) and "patch_embed" not in k}
        print(f"bench --precision int8: GEMM nodes {gemms}, head {prec.get('head')}")
        if gemms != {"int8"} or prec.get("head") != "fp32":
            failures.append(f"bench --precision int8: GEMM nodes ran {gemms}, head {prec.get('head')}")
    pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "auto")

    # Refusals.
    proc = pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "int8", check=False)
    if isa != "none" and (proc.returncode != 1 or "quantize it first" not in proc.stderr
                          or args.model not in proc.stderr):
        failures.append(f"int8 on a float file: rc {proc.returncode}, {proc.stderr!r}")
    env = dict(os.environ, POLA_ISA="scalar")
    commands = {
        "run": ["run", "-m", q, "-i", inp, "-o", out],
        "classify": ["classify", "-m", q, os.path.join(os.path.dirname(args.model), "..", "README.md")],
        "eval": ["eval", "-m", q, "--data", args.workdir],
        "bench": ["bench", "-m", q, "--runs", "1"],
    }
    for name, cmd in commands.items():
        proc = pola(args.pola, *cmd, "--precision", "int8", env=env, check=False)
        print(f"POLA_ISA=scalar {name} --precision int8 -> rc {proc.returncode}: {proc.stderr.strip()}")
        if proc.returncode != 1 or "AMX-INT8" not in proc.stderr or "VNNI" not in proc.stderr:
            failures.append(f"{name} --precision int8 without int8 instructions: rc {proc.returncode}, {proc.stderr!r}")
    # auto on a CPU without int8 runs the quantized file in float, never fails.
    pola(args.pola, "run", "-m", q, "-i", inp, "-o", out, "--precision", "auto", env=env)
    refusals = {
        "an int8 file": (["quantize", "-m", q, "--calibration", calib, "-o", os.path.join(args.workdir, "x.pola")],
                         "already quantized"),
        "a missing calibration source": (["quantize", "-m", args.model, "--calibration",
                                          os.path.join(args.workdir, "nothing-here"), "-o",
                                          os.path.join(args.workdir, "y.pola")], "nothing-here"),
        "the input as output": (["quantize", "-m", q, "--calibration", calib, "-o", q], q),
    }
    for what, (cmd, needle) in refusals.items():
        proc = pola(args.pola, *cmd, check=False)
        print(f"quantize {what} -> rc {proc.returncode}: {proc.stderr.strip()}")
        if proc.returncode != 1 or needle not in proc.stderr:
            failures.append(f"quantize {what}: rc {proc.returncode}, {proc.stderr!r}")
    if not os.path.exists(q) or json.loads(pola(args.pola, "info", "--json", q).stdout) != qinfo:
        failures.append("a refused quantize changed its input")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
