#!/usr/bin/python3
"""Engine-vs-PyTorch parity driver.

  /usr/bin/python3 parity.py --pola BUILD/apps/pola --suite fast|all|mismatch|sizes
                             [--workdir DIR] [--threads N] [--only SUBSTRING] [--list]

For every case: generate a random model file and input (tests/reference/make_case.py), run
`pola run --model M --input X --output Y --threads N`, and require
    max|engine - ref| <= 1e-4 * max|ref|  and the same argmax per image.
On failure the engine is re-run with --dump-dir and the named intermediates are compared layer
by layer; the first diverging name is printed.

Suites: fast = pola_pvt_tiny and pola_swin_t at batch 1 and 3 + every reduced variant, and at
other input sizes (reduced variants at a non-square size with their stage features, the two at
256x320); all = fast + the other six full-size presets + more sizes (512x512, 224x672, 320x224);
sizes = only the cases at other input sizes (fast and slow); mismatch = for every trap flag (traps.py) the
engine must FAIL the criterion against the reference run under that flag, and (so the check
cannot pass vacuously) PASS it against the correct reference on the same model.
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

from cases import SUITES  # noqa: E402
from compare import compare_dumps, parity_verdict, tensor_verdict  # noqa: E402
from dump_names import expected_dump_names, stage_output_names  # noqa: E402
from make_case import make_case  # noqa: E402
from pola_config import get_config  # noqa: E402
from polaformer_ref import run  # noqa: E402
from randomize import input_dependence, logits_look_healthy  # noqa: E402

ENGINE_TIMEOUT_S = 1800


class EngineError(RuntimeError):
    pass


def engine_model_path(case_dir):
    """The model file the engine runs: the converter's output if the case has one."""
    converted = os.path.join(case_dir, "converted.pola")
    return converted if os.path.exists(converted) else os.path.join(case_dir, "model.pola")


def convert_checkpoint(pola, case, case_dir):
    from save_checkpoint import CHECKPOINT_FORMS
    checkpoint = os.path.join(case_dir, CHECKPOINT_FORMS[case.via_checkpoint][0])
    cmd = [pola, "convert", checkpoint, "--output", os.path.join(case_dir, "converted.pola"), "--arch", case.arch]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise EngineError(f"`{' '.join(cmd)}` exited {proc.returncode}:\n    " + "\n    ".join(tail))


def run_engine(pola, case_dir, threads, dump_dir=None):
    out = os.path.join(case_dir, "engine_logits.npy")
    if os.path.exists(out):
        os.remove(out)
    cmd = [pola, "run", "--model", engine_model_path(case_dir),
           "--input", os.path.join(case_dir, "input.npy"), "--output", out, "--threads", str(threads)]
    if dump_dir:
        shutil.rmtree(dump_dir, ignore_errors=True)
        os.makedirs(dump_dir)
        cmd += ["--dump-dir", dump_dir]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S)
    seconds = time.time() - start
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise EngineError(f"`{' '.join(cmd)}` exited {proc.returncode}:\n    " + "\n    ".join(tail))
    if not os.path.exists(out):
        raise EngineError(f"engine exited 0 but wrote no {out}")
    logits = np.load(out)
    if logits.dtype != np.float32:
        raise EngineError(f"engine logits are {logits.dtype}, the contract is float32")
    return logits, seconds


def diagnose(pola, case, case_dir, threads):
    """Re-run the engine with dumps and compare layer by layer."""
    engine_dump = os.path.join(case_dir, "engine_dump")
    try:
        run_engine(pola, case_dir, threads, dump_dir=engine_dump)
    except EngineError as e:
        return [f"  (no layer comparison: {e})"]
    names = expected_dump_names(get_config(case.arch))
    first_bad, lines = compare_dumps(names, os.path.join(case_dir, "dump"), engine_dump)
    head = [f"  first diverging intermediate: {first_bad}" if first_bad else
            "  all intermediates within tolerance (divergence only in the final logits?)"]
    if first_bad:
        k = names.index(first_bad)
        lines = lines[max(0, k - 2):k + 4]  # context around the first divergence
    return head + lines


def parity_case(args, case, case_dir):
    cfg = get_config(case.arch)
    t0 = time.time()
    stale = os.path.join(case_dir, "converted.pola")
    if os.path.exists(stale):
        os.remove(stale)
    make_case(case_dir, cfg, arch=case.arch, seed=case.seed, batch=case.batch, dump=True,
              rand_options=case.rand_options, size=case.size,
              checkpoints=[case.via_checkpoint] if case.via_checkpoint else ())
    ref = np.load(os.path.join(case_dir, "logits.npy"))
    t_ref = time.time() - t0
    weak = weak_case_reason(ref)
    if weak:
        return False, f"case too weak to test anything: {weak}", []
    if case.via_checkpoint:
        convert_checkpoint(args.pola, case, case_dir)
    engine, t_engine = run_engine(args.pola, case_dir, args.threads)
    ok, msg = parity_verdict(engine, ref)
    details = [] if ok else diagnose(args.pola, case, case_dir, args.threads)
    if case.features:
        features_ok, features_lines = compare_features(args, cfg, case_dir)
        ok = ok and features_ok
        msg += "; features " + ("match" if features_ok else "DIFFER")
        details += features_lines
    return ok, f"{msg} [ref {t_ref:.1f}s, engine {t_engine:.1f}s]", details


def compare_features(args, cfg, case_dir):
    """`pola features` (every stage + pooled) against the reference's intermediates: stage i is
    the output of its last block, (B, N, C) tokens reshaped to NCHW; pooled is `pool`."""
    out = os.path.join(case_dir, "features")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [args.pola, "features", "--model", engine_model_path(case_dir), "--input",
           os.path.join(case_dir, "input.npy"), "-o", out, "--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S)
    if proc.returncode != 0:
        return False, [f"  `{' '.join(cmd)}` exited {proc.returncode}: {proc.stderr.strip()}"]
    dump = os.path.join(case_dir, "dump")
    height, width = np.load(os.path.join(case_dir, "input.npy")).shape[-2:]
    ok, lines = True, []
    for i, name in enumerate(stage_output_names(cfg), start=1):
        tokens = np.load(os.path.join(dump, f"{name}.npy"))                 # (B, N, C)
        b, n, c = tokens.shape
        scale = int(round((height * width / n) ** 0.5))                     # the stage's stride
        ref = tokens.transpose(0, 2, 1).reshape(b, c, height // scale, width // scale)
        good, status = tensor_verdict(np.load(os.path.join(out, f"stage{i}.npy")), ref)
        ok &= good
        lines.append(f"  {'ok ' if good else 'BAD'} stage{i} (= {name}): {status}")
    good, status = tensor_verdict(np.load(os.path.join(out, "pooled.npy")), np.load(os.path.join(dump, "pool.npy")))
    ok &= good
    lines.append(f"  {'ok ' if good else 'BAD'} pooled (= pool): {status}")
    return ok, ([] if ok else lines)


def weak_case_reason(ref):
    """Why a reference output could let a wrong engine pass (None if it is fine)."""
    ok, why = logits_look_healthy(ref)
    if not ok:
        return why
    if ref.shape[0] > 1 and input_dependence(ref) < 1e-2:
        return "logits barely depend on the input image"
    return None


def mismatch_case(args, case, case_dir):
    cfg = get_config(case.arch)
    model, images, correct, _ = make_case(case_dir, cfg, arch=case.arch, seed=case.seed, batch=case.batch,
                                          rand_options=case.rand_options)
    weak = weak_case_reason(correct)
    if weak:
        return False, f"case too weak to test anything: {weak}", []
    trapped, _ = run(model, images, traps=[case.trap])
    np.save(os.path.join(case_dir, "logits_trap.npy"), trapped.to(torch.float32).numpy())
    engine, _ = run_engine(args.pola, case_dir, args.threads)
    ok_correct, msg_correct = parity_verdict(engine, correct.numpy())
    ok_trap, msg_trap = parity_verdict(engine, trapped.numpy())
    if not ok_correct:
        return False, f"inconclusive: engine does not match the correct reference ({msg_correct})", []
    if ok_trap:
        return False, f"engine also matches the trapped reference ({msg_trap}): parity cannot see this trap", []
    return True, f"trap detected ({msg_trap}); correct reference matched ({msg_correct})", []


def check_binary(pola):
    if not pola:
        return "no --pola given"
    if not os.path.isfile(pola):
        return (f"pola binary not found at {pola!r}: build it first "
                f"(cmake --build <build> --target pola) and pass its path with --pola")
    if not os.access(pola, os.X_OK):
        return f"{pola!r} is not executable"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", help="path to the pola binary")
    ap.add_argument("--suite", choices=sorted(SUITES), default="fast")
    ap.add_argument("--workdir", help="where cases are written (default: a fresh temporary directory)")
    ap.add_argument("--threads", type=int, default=1, help="engine --threads and torch threads")
    ap.add_argument("--only", default="", help="run only cases whose name contains this (or, comma-separated, "
                    "any of these)")
    ap.add_argument("--list", action="store_true", help="list the suite's cases and exit")
    args = ap.parse_args()

    wanted = args.only.split(",")
    cases = [c for c in SUITES[args.suite]() if any(w in c.name for w in wanted)]
    if args.list:
        for c in cases:
            print(c.name, f"trap={c.trap}" if c.trap else "", c.rand_options or "")
        return 0
    problem = check_binary(args.pola)
    if problem:
        print(f"ERROR: {problem}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    args.pola = os.path.abspath(args.pola)
    if not cases:
        print(f"ERROR: no cases match --only {args.only!r}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, args.threads))
    workdir = args.workdir or tempfile.mkdtemp(prefix=f"pola_parity_{args.suite}_")
    os.makedirs(workdir, exist_ok=True)
    print(f"suite {args.suite}: {len(cases)} cases in {workdir}, engine {args.pola}", flush=True)

    passed = failed = 0
    for case in cases:
        case_dir = os.path.join(workdir, case.name)
        try:
            runner = mismatch_case if case.trap else parity_case
            ok, msg, details = runner(args, case, case_dir)
        except (EngineError, subprocess.TimeoutExpired) as e:
            ok, msg, details = False, f"engine failed: {e}", []
        passed += ok
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {case.name}: {msg}", flush=True)
        for line in details:
            print(line, flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
