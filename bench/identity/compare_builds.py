#!/usr/bin/python3
"""Two builds of `pola` against each other: the same logits, and not slower nor larger.

  compare_builds.py --old OLD/pola --new NEW/pola [--models-dir DIR] [--quick] [--only NAMES]
  compare_builds.py --bench --old OLD/pola --new NEW/pola [--rounds 5] [--models-dir DIR]

Logits (default mode): for every model x {fp32, bf16} x {batch 1, batch 8}, `pola run` of both
binaries on the same model file and input (same --threads, same environment, so the same POLA_ISA
and OMP_* settings), then one table row: bit-identical or not, and max|new - old| / max|old|. A row
passes when the logits are bit-identical or within --rel (1e-6) of max|old logit|; the exit code
is 1 when any row fails (or a run fails), 0 otherwise.

Models: the eight released configs (Pola-PVT T/S/M/L, Pola-Swin T/S/B/B-384) with seeded random
weights (tests/reference/randomize.py, seed 36) and seeded random inputs at each config's own size
(384 for B-384), and the two shipped Fashion-MNIST models on the first eight images of
models/samples (preprocessed by `pola preprocess -m MODEL`). Batch 1 is the first image of the
batch of 8. They are made once, by this repository's PyTorch reference (so /usr/bin/python3 with
torch), and cached in --models-dir (default /tmp/pola-identity/models, outside the repository:
the eight files take 1.5 GB); the model file format is shared by both builds, so both read the
same files. --quick: pola_pvt_tiny, pola_swin_t and the two Fashion-MNIST models only.

--bench: `pola bench --json` on pola_swin_t and pola_pvt_tiny (the cached random models), fp32
and bf16, batch 1, --threads, old and new alternating (old first in even rounds, new first in odd
ones) for --rounds rounds; prints the medians over rounds of each process's median latency and
peak RSS (`pola bench`'s own getrusage figure, and the whole process's from wait4), and the
median of the per-round new/old ratios. Exit code 1 when new is slower than old by more than
--slower (3%) in the median ratio, or its median peak RSS is higher by more than --rss-slack (1 MB).
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
REFERENCE = os.path.join(ROOT, "tests", "reference")

SEED = 36
CONFIGS = ("pola_pvt_tiny", "pola_pvt_small", "pola_pvt_medium", "pola_pvt_large",
           "pola_swin_t", "pola_swin_s", "pola_swin_b", "pola_swin_b_384")
FASHION = ("fashion_pola_pvt", "fashion_pola_swin")
QUICK = ("pola_pvt_tiny", "pola_swin_t") + FASHION
BENCH = ("pola_swin_t", "pola_pvt_tiny")
PRECISIONS = ("fp32", "bf16")
BATCHES = (1, 8)
GENERATOR_VERSION = 1  # bump when what make_random_model writes changes, so old caches are remade


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_npy(path, array):
    tmp = path + ".tmp.npy"
    np.save(tmp, array)
    os.replace(tmp, path)


def git_commit():
    proc = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def pola_revision(binary):
    """`pola --version`'s revision, or '?'."""
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "revision":
            return words[1]
    return "?"


# ---------------------------------------------------------------- the models and inputs

def manifest_ok(d):
    """The cached model in d is complete and was made by this generator version."""
    try:
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return False
    return m.get("generator") == GENERATOR_VERSION and all(
        os.path.exists(os.path.join(d, n)) for n in ("model.pola", "input8.npy", "input1.npy"))


def write_manifest(d, info):
    info = dict(info, generator=GENERATOR_VERSION, made_by_commit=git_commit(),
                sha256={n: sha256(os.path.join(d, n)) for n in ("model.pola", "input8.npy", "input1.npy")})
    with open(os.path.join(d, "manifest.json.tmp"), "w") as f:
        json.dump(info, f, indent=1)
    os.replace(os.path.join(d, "manifest.json.tmp"), os.path.join(d, "manifest.json"))


def make_random_model(arch, d):
    """A released config with seeded random weights, and a seeded random batch of 8 at its size."""
    try:
        import torch
    except ImportError:
        raise SystemExit("compare_builds: making the random models needs torch: run under /usr/bin/python3")
    sys.path.insert(0, REFERENCE)
    from export_model import export_model
    from pola_config import get_config
    from polaformer_ref import build_model
    from randomize import random_input, randomize

    torch.set_num_threads(2)
    t0 = time.time()
    cfg = get_config(arch)
    model = build_model(cfg)
    randomize(model, seed=SEED)
    tmp = os.path.join(d, "model.pola.tmp")
    export_model(tmp, model.state_dict(), cfg, arch=arch)
    os.replace(tmp, os.path.join(d, "model.pola"))
    del model
    images = random_input(cfg, 8, SEED).numpy()
    save_npy(os.path.join(d, "input8.npy"), images)
    save_npy(os.path.join(d, "input1.npy"), images[:1].copy())
    write_manifest(d, {"arch": arch, "seed": SEED, "input": "randomize.random_input(cfg, 8, seed)"})
    print(f"  made {arch} in {time.time() - t0:.0f} s", flush=True)


def make_fashion_case(name, d, pola):
    """A shipped Fashion-MNIST model (copied, so the cache does not follow the worktree) and the
    first eight models/samples images, preprocessed as the model prescribes."""
    shutil.copyfile(os.path.join(ROOT, "models", name + ".pola"), os.path.join(d, "model.pola.tmp"))
    os.replace(os.path.join(d, "model.pola.tmp"), os.path.join(d, "model.pola"))
    samples = sorted(f for f in os.listdir(os.path.join(ROOT, "models", "samples")) if f.endswith(".png"))[:8]
    if len(samples) < 8:
        raise SystemExit(f"compare_builds: models/samples has {len(samples)} PNG images, 8 needed")
    images = []
    for s in samples:
        out = os.path.join(d, "one.npy")
        run_checked([pola, "preprocess", "-m", os.path.join(d, "model.pola"),
                     os.path.join(ROOT, "models", "samples", s), "-o", out])
        images.append(np.load(out))
        os.remove(out)
    batch = np.concatenate(images).astype(np.float32)
    save_npy(os.path.join(d, "input8.npy"), batch)
    save_npy(os.path.join(d, "input1.npy"), batch[:1].copy())
    write_manifest(d, {"model": f"models/{name}.pola", "samples": samples,
                       "preprocessed_by": f"{pola} ({pola_revision(pola)})"})
    print(f"  made {name}: {', '.join(samples)}", flush=True)


def ensure_models(names, models_dir, pola):
    for name in names:
        d = os.path.join(models_dir, name)
        if manifest_ok(d):
            continue
        os.makedirs(d, exist_ok=True)
        print(f"making the cached model {d} (once)", flush=True)
        if name in FASHION:
            make_fashion_case(name, d, pola)
        else:
            make_random_model(name, d)


# ---------------------------------------------------------------- logits

def run_checked(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return proc


def run_logits(pola, model, inp, out, precision, threads):
    run_checked([pola, "run", "-m", model, "-i", inp, "-o", out, "--precision", precision,
                 "--threads", str(threads)])
    return np.load(out)


def compare(old, new):
    """(bit-identical, max|new - old| / max|old|) of two logit arrays."""
    if old.shape != new.shape or old.dtype != new.dtype:
        return False, float("inf")
    same = old.tobytes() == new.tobytes()
    if same:
        return True, 0.0
    if not (np.isfinite(old).all() and np.isfinite(new).all()):
        return False, float("inf")
    diff = np.abs(new.astype(np.float64) - old.astype(np.float64)).max()
    return False, float(diff / max(np.abs(old.astype(np.float64)).max(), np.finfo(np.float32).tiny))


def logits_mode(args, names):
    work = tempfile.mkdtemp(prefix="pola-identity-run-")
    rows, failed = [], 0
    t_start = time.time()
    print(f"{'model':<18} {'prec':<5} {'batch':>5}  {'bit-identical':<13} {'max|diff|/max|logit|':>20}  "
          f"{'old s':>6} {'new s':>6}  verdict", flush=True)
    try:
        for name in names:
            d = os.path.join(args.models_dir, name)
            fp32_old = {}
            for precision in PRECISIONS:
                for batch in BATCHES:
                    inp = os.path.join(d, f"input{batch}.npy")
                    try:
                        t0 = time.time()
                        old = run_logits(args.old, os.path.join(d, "model.pola"), inp, os.path.join(work, "old.npy"),
                                         precision, args.threads)
                        t1 = time.time()
                        new = run_logits(args.new, os.path.join(d, "model.pola"), inp, os.path.join(work, "new.npy"),
                                         precision, args.threads)
                        t2 = time.time()
                    except RuntimeError as e:
                        failed += 1
                        print(f"{name:<18} {precision:<5} {batch:>5}  ERROR: {e}", flush=True)
                        rows.append({"model": name, "precision": precision, "batch": batch, "error": str(e)})
                        continue
                    same, rel = compare(old, new)
                    ok = same or (rel <= args.rel and not args.strict)
                    failed += not ok
                    verdict = "ok" if same else (f"ok (<= {args.rel:g})" if ok else "FAIL")
                    # A bf16 run giving fp32's logits did not run bf16 arithmetic: identity would prove little.
                    if precision == "fp32":
                        fp32_old[batch] = old
                    elif batch in fp32_old and compare(fp32_old[batch], old)[0]:
                        verdict += " (bf16 logits equal fp32's: bf16 did not run)"
                        failed += ok
                        ok = False
                    print(f"{name:<18} {precision:<5} {batch:>5}  {'yes' if same else 'no':<13} {rel:>20.3e}  "
                          f"{t1 - t0:>6.1f} {t2 - t1:>6.1f}  {verdict}", flush=True)
                    rows.append({"model": name, "precision": precision, "batch": batch, "bit_identical": same,
                                 "rel_max_diff": rel, "max_abs_logit": float(np.abs(old).max()), "ok": ok})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_same = sum(1 for r in rows if r.get("bit_identical"))
    print(f"\n{len(rows)} rows: {n_same} bit-identical, {len(rows) - n_same - failed} within {args.rel:g}, "
          f"{failed} failed ({time.time() - t_start:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"old": args.old, "new": args.new, "rows": rows, "environment": env_summary(args)}, f, indent=1)
    return 1 if failed else 0


# ---------------------------------------------------------------- bench

def bench_process(pola, model, precision, args):
    """Runs one `pola bench` and returns (its JSON, the whole process's peak RSS in MB, its CPU seconds)."""
    cmd = [pola, "bench", "-m", model, "-b", "1", "--threads", str(args.threads), "--precision", precision,
           "--runs", str(args.runs), "--warmup", str(args.warmup), "--json",
           # A given peak skips the GEMM peak measurement (time, and memory of its own).
           "--peak-gflops", "100"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.read().decode()[-400:]}")
        result = json.loads(out.read().decode().strip().splitlines()[-1])
    return result, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def bench_mode(args, names):
    configs = [(arch, p) for arch in names for p in PRECISIONS]
    figures = {(c, who): {"ms": [], "rss": [], "proc_rss": [], "cpu_s": []} for c in configs for who in ("old", "new")}
    ratios = {c: [] for c in configs}
    t_start = time.time()
    loads = [os.getloadavg()[0]]
    print(f"pola bench, batch 1, --threads {args.threads}, --runs {args.runs} --warmup {args.warmup}, "
          f"{args.rounds} alternating rounds", flush=True)
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for c in configs:
            arch, precision = c
            model = os.path.join(args.models_dir, arch, "model.pola")
            got = {}
            for who in order:
                result, proc_rss, cpu_s = bench_process(getattr(args, who), model, precision, args)
                if result.get("precision") != precision:
                    raise RuntimeError(f"{who}: asked for {precision}, ran {result.get('precision')}")
                f = figures[(c, who)]
                f["ms"].append(result["median_ms"])
                f["rss"].append(result["peak_rss_mb"])
                f["proc_rss"].append(proc_rss)
                f["cpu_s"].append(cpu_s)
                got[who] = result["median_ms"]
            ratios[c].append(got["new"] / got["old"])
            loads.append(os.getloadavg()[0])
            print(f"  round {r + 1}: {arch:<14} {precision}  old {got['old']:8.2f} ms  new {got['new']:8.2f} ms  "
                  f"new/old {ratios[c][-1]:.3f}", flush=True)
    print(f"\n{'model':<14} {'prec':<5} {'old ms':>8} {'new ms':>8} {'new/old':>8} {'min..max':>13}  "
          f"{'old min':>8} {'new min':>8} {'old cpu':>7} {'new cpu':>7}  "
          f"{'old RSS':>8} {'new RSS':>8} {'old proc':>8} {'new proc':>8}  verdict")
    bad = 0
    rows = []
    for c in configs:
        arch, precision = c
        o, n = figures[(c, "old")], figures[(c, "new")]
        med = {k: (statistics.median(o[k]), statistics.median(n[k])) for k in ("ms", "rss", "proc_rss", "cpu_s")}
        ratio = statistics.median(ratios[c])
        slower = ratio > 1 + args.slower
        larger = med["rss"][1] > med["rss"][0] + args.rss_slack
        bad += slower or larger
        verdict = ", ".join(v for v, on in (("SLOWER", slower), ("MORE MEMORY", larger)) if on) or "ok"
        print(f"{arch:<14} {precision:<5} {med['ms'][0]:>8.2f} {med['ms'][1]:>8.2f} {ratio:>8.3f} "
              f"{min(ratios[c]):>6.3f}..{max(ratios[c]):<6.3f}  {min(o['ms']):>8.2f} {min(n['ms']):>8.2f} "
              f"{med['cpu_s'][0]:>7.2f} {med['cpu_s'][1]:>7.2f}  {med['rss'][0]:>8.1f} {med['rss'][1]:>8.1f} "
              f"{med['proc_rss'][0]:>8.1f} {med['proc_rss'][1]:>8.1f}  {verdict}")
        rows.append({"model": arch, "precision": precision, "old_median_ms": med["ms"][0],
                     "new_median_ms": med["ms"][1], "median_ratio": ratio, "ratios": ratios[c],
                     "old_peak_rss_mb": med["rss"][0], "new_peak_rss_mb": med["rss"][1],
                     "old_cpu_s": med["cpu_s"][0], "new_cpu_s": med["cpu_s"][1],
                     "old_process_rss_mb": med["proc_rss"][0], "new_process_rss_mb": med["proc_rss"][1],
                     "old": figures[(c, "old")], "new": figures[(c, "new")]})
    print(f"\nms: medians over rounds of each process's median latency; new/old: median of the per-round ratios; "
          f"min: the fastest round's; cpu: the process's user+sys seconds (median); "
          f"RSS: pola bench's peak RSS (MB), proc: the whole process's (wait4). ({time.time() - t_start:.0f} s)")
    cores = os.cpu_count() or 1
    print(f"load average (1 min) during the rounds: {min(loads):.2f}..{max(loads):.2f} on {cores} cores")
    # The benchmark's own threads count in the load: more than one runnable beyond them is other work.
    if max(loads) > args.threads + 1:
        print(f"WARNING: other work shared the machine (load up to {max(loads):.2f} on {cores} cores, "
              f"{args.threads} of it this benchmark's threads): the "
              f"latencies and their verdicts are not to be trusted; the peak RSS figures still are. "
              f"Repeat in a quiet window.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"old": args.old, "new": args.new, "rows": rows, "loadavg": loads,
                       "environment": env_summary(args)}, f, indent=1)
    return 1 if bad else 0


# ---------------------------------------------------------------- main

def env_summary(args):
    return {"old_revision": pola_revision(args.old), "new_revision": pola_revision(args.new),
            "threads": args.threads, "POLA_ISA": os.environ.get("POLA_ISA"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "loadavg": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the baseline pola binary")
    ap.add_argument("--new", required=True, help="the pola binary under test")
    ap.add_argument("--models-dir", default="/tmp/pola-identity/models", help="cache of models and inputs")
    ap.add_argument("--quick", action="store_true", help="pola_pvt_tiny, pola_swin_t and the Fashion-MNIST models")
    ap.add_argument("--only", help="comma list of model names (of " + ", ".join(CONFIGS + FASHION) + ")")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rel", type=float, default=1e-6, help="pass threshold of max|diff| / max|old logit|")
    ap.add_argument("--strict", action="store_true", help="every row must be bit-identical")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--bench", action="store_true", help="latency and peak RSS instead of logits")
    ap.add_argument("--rounds", type=int, default=5, help="--bench: alternating rounds")
    ap.add_argument("--runs", type=int, default=20, help="--bench: timed runs per process")
    ap.add_argument("--warmup", type=int, default=3, help="--bench: untimed runs per process")
    ap.add_argument("--slower", type=float, default=0.03, help="--bench: tolerated median new/old - 1")
    ap.add_argument("--rss-slack", type=float, default=1.0, help="--bench: tolerated peak RSS increase, MB")
    args = ap.parse_args()
    for who in ("old", "new"):
        path = getattr(args, who)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            ap.error(f"--{who} {path}: not an executable file")
        setattr(args, who, os.path.abspath(path))
    if args.only:
        names = tuple(args.only.split(","))
        unknown = [n for n in names if n not in CONFIGS + FASHION]
        if unknown:
            ap.error(f"--only: unknown {unknown}")
    else:
        names = BENCH if args.bench else (QUICK if args.quick else CONFIGS + FASHION)
    if args.bench:
        names = tuple(n for n in names if n in BENCH) or BENCH
    e = env_summary(args)
    print(f"old {args.old} ({e['old_revision']})\nnew {args.new} ({e['new_revision']})\n"
          f"threads {args.threads}, POLA_ISA {e['POLA_ISA'] or 'unset'}, OMP_NUM_THREADS "
          f"{e['OMP_NUM_THREADS'] or 'unset'}, load average {e['loadavg']:.2f}, models {args.models_dir}", flush=True)
    ensure_models(names, args.models_dir, args.new)
    return bench_mode(args, names) if args.bench else logits_mode(args, names)


if __name__ == "__main__":
    sys.exit(main())
