"""The parity criterion and the layer-by-layer diagnosis of a failure."""
import os

import numpy as np

RTOL = 1e-4  # max|engine - ref| <= RTOL * max|ref|


def _top2_gap(row):
    top = np.sort(row)[-2:]
    return float(top[1] - top[0]) if row.size > 1 else np.inf


def parity_verdict(engine, ref, rtol=RTOL):
    """(ok, message) for engine vs reference logits, both (B, classes).

    Passes when max|diff| <= rtol * max|ref| and every image has the same argmax. A reference
    whose two best classes are closer than the tolerance counts as a tie: either class is
    accepted then (the value criterion still has to hold)."""
    engine = np.asarray(engine, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if engine.shape != ref.shape:
        return False, f"shape {engine.shape} != reference {ref.shape}"
    if not np.isfinite(engine).all():
        return False, f"{int((~np.isfinite(engine)).sum())} non-finite engine values"
    tol = rtol * float(np.abs(ref).max())
    diff = float(np.abs(engine - ref).max())
    bad_images = []
    for b in range(ref.shape[0]):
        e_arg, r_arg = int(engine[b].argmax()), int(ref[b].argmax())
        if e_arg != r_arg:
            tied = _top2_gap(ref[b]) <= 2 * tol and ref[b][e_arg] >= ref[b][r_arg] - 2 * tol
            if not tied:
                bad_images.append(f"image {b}: argmax {e_arg} != {r_arg}")
    ok = diff <= tol and not bad_images
    msg = f"max|diff| {diff:.3g} vs tol {tol:.3g} (ratio {diff / tol if tol else np.inf:.3g})"
    if bad_images:
        msg += "; " + "; ".join(bad_images[:3])
    return ok, msg


def tensor_verdict(eng, ref, rtol=RTOL):
    """(ok, status) for one engine tensor against the reference: same shape, finite, and
    max|diff| <= rtol * max|ref|."""
    eng = np.asarray(eng, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if eng.shape != ref.shape:
        return False, f"shape {eng.shape} != {ref.shape}"
    if not np.isfinite(eng).all():
        return False, "non-finite values"
    scale = float(np.abs(ref).max()) or 1.0
    diff = np.abs(eng - ref)
    where = np.unravel_index(int(diff.argmax()), diff.shape)
    return (float(diff.max()) <= rtol * scale,
            f"max|diff|/max|ref| {float(diff.max()) / scale:.3g} at {tuple(int(i) for i in where)}")


def compare_dumps(names, ref_dir, engine_dir, rtol=RTOL):
    """Compare named intermediates in execution order.

    Returns (first_bad_name or None, report lines). A tensor diverges when max|diff| exceeds
    rtol * max|ref| of that tensor; missing or mis-shaped engine dumps also count."""
    lines, first_bad = [], None
    for name in names:
        ref_path = os.path.join(ref_dir, f"{name}.npy")
        eng_path = os.path.join(engine_dir, f"{name}.npy")
        ref = np.load(ref_path).astype(np.float64)
        if not os.path.exists(eng_path):
            status = "missing in engine dump"
            ok = False
        else:
            ok, status = tensor_verdict(np.load(eng_path), ref, rtol)
        lines.append(f"  {'ok ' if ok else 'BAD'} {name}: {status}")
        if not ok and first_bad is None:
            first_bad = name
    return first_bad, lines
