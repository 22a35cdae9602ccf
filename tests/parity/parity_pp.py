#!/usr/bin/python3
"""Engine-vs-reference parity for PolaFormer++ (family "pp"), through the authors' checkpoint layout.

  /usr/bin/python3 parity_pp.py --pola BUILD/apps/pola --suite fast|configs [--workdir DIR]
                                [--threads N] [--only SUBSTRING] [--list]

Per model: randomize the float64 reference (tests/reference/pola_pp.py: non-trivial BN statistics,
s1/s2 and layer scales), save it as the authors save it (`model` + `state_dict_ema` + a pickled
yacs config, pola_pp_checkpoint.py), `pola convert` it (BatchNorms folded by the converter), then
per input size run `pola run` and `pola features` and require
    max|engine - ref| <= 1e-4 * max|ref| and the same argmax per image (compare.py),
and every stage's features (before downsampling) and the pooled embedding within the same bound.

Checks that prove the comparison can fail, on the same converted model:
  ema      the engine (raw weights) must NOT match the reference run on the EMA weights, and a
           model converted with --weights ema must match it;
  trap     the engine must NOT match the reference run with RoPE on the denominator too
           (traps.py pp_rope_denominator), while matching the correct one.

Suites: fast = reduced variants (their own size and two non-square sizes) and pola_pp_b0 at 224
with the ema and trap checks; configs = every variant b0-b5 at 224x224 and at two non-square sizes.
Ends with `N passed, M failed`; exit status 1 on any failure, 2 when the binary is unusable.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import torch  # noqa: E402

from compare import parity_verdict, tensor_verdict  # noqa: E402
from parity import ENGINE_TIMEOUT_S, EngineError, check_binary  # noqa: E402
from pola_pp_checkpoint import save_pp_checkpoint  # noqa: E402
from polaformer_ref import build_model, get_config, run  # noqa: E402
from randomize import random_input, randomize  # noqa: E402

# Non-square sizes: odd sides exercise every stride-2 conv's ceil(side / 2) (SPEC-polaformerpp T9).
NON_SQUARE = [(160, 96), (77, 130)]


class PpCase:
    def __init__(self, name, arch, seed, batch, sizes, checks=()):
        self.name, self.arch, self.seed, self.batch = name, arch, seed, batch
        self.sizes = sizes      # (H, W) per run; None: the model's own img_size
        self.checks = checks    # subset of {"ema", "trap"}


def fast_cases():
    return [
        PpCase("reduced_pp_basic", "reduced_pp_basic", 1201, 2, [None] + NON_SQUARE, checks=("ema", "trap")),
        PpCase("reduced_pp_mixed", "reduced_pp_mixed", 1202, 2, [None, NON_SQUARE[1]]),
        PpCase("pola_pp_b0", "pola_pp_b0", 1203, 1, [None], checks=("trap",)),
    ]


def config_cases():
    return [PpCase(f"pola_pp_b{i}", f"pola_pp_b{i}", 1300 + i, 1, [None] + NON_SQUARE) for i in range(6)]


SUITES = {"fast": fast_cases, "configs": config_cases}


def call(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise EngineError(f"`{' '.join(cmd)}` exited {proc.returncode}:\n    " + "\n    ".join(tail))
    return proc


def engine_logits(args, model_path, input_path, out_path):
    call([args.pola, "run", "--model", model_path, "--input", input_path, "--output", out_path,
          "--threads", str(args.threads)])
    logits = np.load(out_path)
    if logits.dtype != np.float32:
        raise EngineError(f"engine logits are {logits.dtype}, the contract is float32")
    return logits


def compare_features(args, model_path, input_path, out_dir, dumps, height, width):
    """`pola features` (stage i = NCHW of the stage's output before downsampling, pooled) against
    the reference's `layers.i.features` and `pool`."""
    shutil.rmtree(out_dir, ignore_errors=True)
    call([args.pola, "features", "--model", model_path, "--input", input_path, "-o", out_dir,
          "--threads", str(args.threads)])
    ok, lines = True, []
    for i in range(4):
        tokens = dumps[f"layers.{i}.features"].numpy()                  # (B, N, C)
        ref = tokens.transpose(0, 2, 1)
        engine = np.load(os.path.join(out_dir, f"stage{i + 1}.npy"))     # (B, C, h, w)
        good, status = tensor_verdict(engine.reshape(ref.shape), ref)
        ok &= good
        lines.append(f"  {'ok ' if good else 'BAD'} stage{i + 1} {tuple(engine.shape)}: {status}")
    good, status = tensor_verdict(np.load(os.path.join(out_dir, "pooled.npy")), dumps["pool"].numpy())
    ok &= good
    lines.append(f"  {'ok ' if good else 'BAD'} pooled: {status}")
    return ok, lines


def run_case(args, case, case_dir):
    """Yields (name, ok, message, details) per check of the case."""
    os.makedirs(case_dir, exist_ok=True)
    cfg = get_config(case.arch)
    model = build_model(cfg)
    randomize(model, case.seed)
    ckpt = os.path.join(case_dir, "max_ema_acc.pth")
    _, ema = save_pp_checkpoint(ckpt, model, case.arch, case.seed)
    converted = os.path.join(case_dir, "converted.pola")
    call([args.pola, "convert", ckpt, "--output", converted])
    for size in case.sizes:
        h, w = size or (cfg["img_size"], cfg["img_size"])
        tag = f"{h}x{w}"
        images = random_input(cfg, case.batch, case.seed + h * 7 + w, (h, w))
        input_path = os.path.join(case_dir, f"input_{tag}.npy")
        np.save(input_path, images.numpy())
        t0 = time.time()
        ref, dumps = run(model, images, dump=True)
        t_ref = time.time() - t0
        ref = ref.numpy()
        t0 = time.time()
        engine = engine_logits(args, converted, input_path, os.path.join(case_dir, f"engine_{tag}.npy"))
        t_engine = time.time() - t0
        ok, msg = parity_verdict(engine, ref)
        features_ok, lines = compare_features(args, converted, input_path, os.path.join(case_dir, f"features_{tag}"),
                                              dumps, h, w)
        yield (f"{tag}", ok and features_ok,
               f"{msg}; features {'match' if features_ok else 'DIFFER'} [ref {t_ref:.1f}s, engine {t_engine:.1f}s]",
               [] if features_ok else lines)
        if "trap" in case.checks and size is None:
            trapped, _ = run(model, images, traps=["pp_rope_denominator"])
            hit, trap_msg = parity_verdict(engine, trapped.numpy())
            yield (f"{tag}_trap_rope_denominator", ok and not hit,
                   ("trap detected: " if not hit else "engine ALSO matches the trapped reference: ") + trap_msg, [])
        if "ema" in case.checks and size is None:
            model_ema = build_model(cfg)
            model_ema.load_state_dict(ema)
            ref_ema, _ = run(model_ema, images)
            hit, swap_msg = parity_verdict(engine, ref_ema.numpy())
            yield (f"{tag}_raw_is_not_ema", ok and not hit,
                   ("raw weights differ from EMA: " if not hit else "raw run ALSO matches EMA: ") + swap_msg, [])
            converted_ema = os.path.join(case_dir, "converted_ema.pola")
            call([args.pola, "convert", ckpt, "--weights", "ema", "--output", converted_ema])
            engine_ema = engine_logits(args, converted_ema, input_path, os.path.join(case_dir, f"engine_ema_{tag}.npy"))
            good, ema_msg = parity_verdict(engine_ema, ref_ema.numpy())
            yield (f"{tag}_weights_ema", good, ema_msg, [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", help="path to the pola binary")
    ap.add_argument("--suite", choices=sorted(SUITES), default="fast")
    ap.add_argument("--workdir", help="where cases are written (default: a fresh temporary directory)")
    ap.add_argument("--threads", type=int, default=1, help="engine --threads and torch threads")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    ap.add_argument("--list", action="store_true", help="list the suite's cases and exit")
    args = ap.parse_args()
    cases = [c for c in SUITES[args.suite]() if args.only in c.name]
    if args.list:
        for c in cases:
            print(c.name, c.sizes, c.checks)
        return 0
    problem = check_binary(args.pola)
    if problem:
        print(f"ERROR: {problem}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    if not cases:
        print(f"ERROR: no cases match --only {args.only!r}", file=sys.stderr)
        return 2
    args.pola = os.path.abspath(args.pola)
    torch.set_num_threads(max(1, args.threads))
    workdir = args.workdir or tempfile.mkdtemp(prefix=f"pola_parity_pp_{args.suite}_")
    print(f"suite pp {args.suite}: {len(cases)} models in {workdir}, engine {args.pola}", flush=True)
    passed = failed = 0
    for case in cases:
        case_dir = os.path.join(workdir, case.name)
        try:
            for name, ok, msg, details in run_case(args, case, case_dir):
                passed += ok
                failed += not ok
                print(f"{'PASS' if ok else 'FAIL'} {case.name}_{name}: {msg}", flush=True)
                for line in details:
                    print(line, flush=True)
        except (EngineError, subprocess.TimeoutExpired) as e:
            failed += 1
            print(f"FAIL {case.name}: engine failed: {e}", flush=True)
        # The checkpoints of the large variants are big (raw + EMA + optimizer state).
        ckpt = os.path.join(case_dir, "max_ema_acc.pth")
        if os.path.exists(ckpt):
            os.remove(ckpt)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
