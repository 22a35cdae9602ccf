#!/usr/bin/python3
"""`--precision` on a CPU without native bf16, emulated with POLA_ISA=avx512 (which caps the
kernels and oneDNN at AVX-512 without AVX512-BF16 or AMX), and bad values. Runs on any CPU.

  check_precision_refusal.py --pola build/apps/pola --model models/fashion_pola_pvt.pola --workdir DIR

- `pola --version` says auto picks fp32 and why;
- `run/classify/eval/bench --precision bf16` exit 1 naming the missing AMX-BF16 / AVX512-BF16;
- `run --precision auto` runs and gives exactly the `--precision fp32` logits;
- `--precision fp16` is refused by the option parser on every command;
- with AVX512-BF16 but no AMX (POLA_ISA=avx512_bf16, where the CPU has bf16): auto follows the
  measured bf16 dot-product rate `pola --version` reports, and runs exactly what it picked;
  bf16 by name runs the attention core's products in bf16 only where that rate says they are faster.
"""
import argparse
import json
import os
import re
import sys

import numpy as np

from precision_common import auto_precision, native_bf16, pola

MISSING = "neither AMX-BF16 nor AVX512-BF16"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ, POLA_ISA="avx512")
    failures = []

    picked, reason = auto_precision(args.pola, env)
    print(f"POLA_ISA=avx512: auto -> {picked} ({reason})")
    if picked != "fp32" or MISSING not in reason:
        failures.append(f"under POLA_ISA=avx512 `pola --version` says auto = {picked} ({reason})")

    inp = os.path.join(args.workdir, "input.npy")
    cfg = json.loads(pola(args.pola, "info", "--json", args.model).stdout)["config"]
    shape = (2, cfg["in_chans"], cfg["img_size"], cfg["img_size"])
    np.save(inp, np.random.default_rng(19).standard_normal(shape).astype(np.float32))
    out = os.path.join(args.workdir, "out.npy")
    commands = {
        "run": ["run", "-m", args.model, "-i", inp, "-o", out],
        "classify": ["classify", "-m", args.model, os.path.join(os.path.dirname(args.model), "..", "README.md")],
        "eval": ["eval", "-m", args.model, "--data", args.workdir],
        "bench": ["bench", "-m", args.model, "--runs", "1"],
    }
    for name, cmd in commands.items():
        proc = pola(args.pola, *cmd, "--precision", "bf16", env=env, check=False)
        print(f"{name} --precision bf16 -> rc {proc.returncode}: {proc.stderr.strip()}")
        if proc.returncode != 1 or MISSING not in proc.stderr or "--precision bf16" not in proc.stderr:
            failures.append(f"{name} --precision bf16 under POLA_ISA=avx512: rc {proc.returncode}, {proc.stderr!r}")
        proc = pola(args.pola, *cmd, "--precision", "fp16", check=False)
        if proc.returncode == 0 or "--precision" not in proc.stderr:
            failures.append(f"{name} --precision fp16 was not refused: rc {proc.returncode}, {proc.stderr!r}")

    pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "fp32", env=env)
    fp32 = np.load(out)
    pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "auto", env=env)
    if not np.array_equal(np.load(out), fp32):
        failures.append("--precision auto under POLA_ISA=avx512 does not give the fp32 logits")

    # A CPU with AVX512-BF16 but no AMX (Zen 4/5), emulated by the cap where the CPU has bf16:
    # auto picks bf16 there only if `pola --version` reports vdpbf16ps at >= 1.5x the FMA rate,
    # and then runs exactly what bf16 by name runs; bf16 by name always runs.
    bf16_env = dict(os.environ, POLA_ISA="avx512_bf16")
    if native_bf16(args.pola) != "none":
        picked, reason = auto_precision(args.pola, bf16_env)
        print(f"POLA_ISA=avx512_bf16: auto -> {picked} ({reason})")
        rate = re.search(r"measured ([0-9.]+)x the fp32 FMA rate \(bf16 needs >= ([0-9.]+)x\)", reason)
        if not rate:
            failures.append(f"under POLA_ISA=avx512_bf16 `pola --version` gives no measured rate: {reason}")
        elif picked != ("bf16" if float(rate.group(1)) >= float(rate.group(2)) else "fp32"):
            failures.append(f"under POLA_ISA=avx512_bf16 auto = {picked} disagrees with its rate: {reason}")
        pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "bf16", env=bf16_env)
        bf16 = np.load(out)
        if np.array_equal(bf16, fp32):
            failures.append("--precision bf16 under POLA_ISA=avx512_bf16 gives the fp32 logits (not bf16)")
        pola(args.pola, "run", "-m", args.model, "-i", inp, "-o", out, "--precision", "auto", env=bf16_env)
        if not np.array_equal(np.load(out), bf16 if picked == "bf16" else fp32):
            failures.append(f"--precision auto under POLA_ISA=avx512_bf16 does not give the {picked} logits")
        # bf16 by name runs the GEMMs in bf16 and the attention core's products in bf16 only where
        # the same process measured bf16 dot products faster than fp32 FMAs (else the fp32 core).
        bench = json.loads(pola(args.pola, "bench", "-m", args.model, "--precision", "bf16", "--profile", "--json",
                                "--runs", "1", "--warmup", "0", env=bf16_env).stdout)
        rate = re.search(r"measured ([0-9.]+)x the fp32 FMA rate \(bf16 needs >= ([0-9.]+)x\)",
                         bench.get("attention_precision_reason", ""))
        cores = {n["precision"] for n in bench["profile"] if n["node"].endswith(".core")}
        gemms = {n["precision"] for n in bench["profile"] if n["node"].endswith((".proj", ".fc1", "head"))}
        print(f"POLA_ISA=avx512_bf16: bench --precision bf16: attention {bench.get('attention_precision')} "
              f"({bench.get('attention_precision_reason')}); core nodes {cores}, GEMM nodes {gemms}")
        if not rate:
            failures.append(f"bench --precision bf16 gives no measured rate for the attention core: {bench}")
        else:
            want = "bf16" if float(rate.group(1)) >= float(rate.group(2)) else "fp32"
            if cores != {want} or bench.get("attention_precision") != want:
                failures.append(f"bench --precision bf16: attention cores ran {cores}, not {want} as the rate says")
        if gemms != {"bf16"}:
            failures.append(f"bench --precision bf16: GEMM nodes ran {gemms}, not bf16")
    else:
        print("this CPU has no native bf16: the AVX512-BF16-only case is not emulated")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
