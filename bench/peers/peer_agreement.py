"""Do the three engines compute the same function? Logits of one input (batch 1) from each.

Each engine reads the same input.npy and the same weights; the float64 PyTorch reference logits
(make_case.py) are the oracle. Differences are max|a - b| / max|reference logit|, so they read
as a fraction of the logits' scale regardless of the random weights.
"""
import os

import numpy as np

from peer_runs import HERE, run_measured

# float32 engines against a float64 oracle through ~20 blocks: 1e-3 of the logit scale is far
# above rounding noise (~1e-6 here) and far below what a wrong op does (~1e-1).
AGREEMENT_TOLERANCE = 1e-3


def engine_logits(pola, case, threads, out_dir):
    out = os.path.join(out_dir, "engine_logits.npy")
    run_measured([pola, "run", "--model", case.model_path, "--input", case.input_npy, "--output", out,
                  "--threads", str(threads)])
    return np.load(out).reshape(-1)


def pytorch_logits(case, threads, out_dir):
    out = os.path.join(out_dir, "pytorch_logits.npy")
    run_measured(["/usr/bin/python3", os.path.join(HERE, "torch_bench.py"), "--model", case.model_path,
                  "--threads", str(threads), "--runs", "1", "--warmup", "0", "--input", case.input_npy,
                  "--output", out], cwd=HERE)
    return np.load(out).reshape(-1)


def ort_logits(case, threads, out_dir):
    images = np.load(case.input_npy).astype("<f4")
    raw_in = os.path.join(out_dir, "input.f32")
    raw_out = os.path.join(out_dir, "ort_logits.f32")
    images.tofile(raw_in)
    run_measured(["node", os.path.join(HERE, "ort_bench.js"), "--model", case.onnx_path(images.shape[0]),
                  "--shape", ",".join(map(str, images.shape)), "--threads", str(threads), "--runs", "1",
                  "--warmup", "0", "--input", raw_in, "--output", raw_out])
    return np.fromfile(raw_out, dtype="<f4")


def check_agreement(pola, case, threads):
    """{'argmax': {name: int}, 'diff': {(a, b): relative max diff}, 'agree': bool}."""
    out_dir = os.path.join(case.dir, "agreement")
    os.makedirs(out_dir, exist_ok=True)
    logits = {
        "reference_f64": np.load(case.reference_logits).reshape(-1).astype(np.float64),
        "engine": engine_logits(pola, case, threads, out_dir).astype(np.float64),
        "pytorch": pytorch_logits(case, threads, out_dir).astype(np.float64),
        "ort": ort_logits(case, threads, out_dir).astype(np.float64),
    }
    scale = np.abs(logits["reference_f64"]).max()
    pairs = [("engine", "reference_f64"), ("pytorch", "reference_f64"), ("ort", "reference_f64"),
             ("engine", "ort"), ("engine", "pytorch"), ("ort", "pytorch")]
    diff = {f"{a} vs {b}": float(np.abs(logits[a] - logits[b]).max() / scale) for a, b in pairs}
    argmax = {name: int(v.argmax()) for name, v in logits.items()}
    agree = len(set(argmax.values())) == 1 and max(diff.values()) < AGREEMENT_TOLERANCE
    return {"model": case.arch, "threads": threads, "max_abs_logit": float(scale), "argmax": argmax,
            "diff": diff, "agree": agree}
