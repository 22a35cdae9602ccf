#!/usr/bin/python3
"""`--low-memory`: the same answers, without packed copies of the weights.

  check_low_memory.py --pola build/apps/pola

For a reduced PVT (spatial-reduction convolutions) and a reduced Swin config, random weights made by
the PyTorch reference (make_case.py, float64 logits):
- `pola run --low-memory` gives the reference's logits within the parity tolerance, as the default
  run does, and within 1e-4 of max|logit| of the default run;
- `pola bench --low-memory --json` reports packed weights of at most a tenth of what the default
  run packs (only depthwise convolution weights stay packed), and says it ran in low-memory mode;
- `pola classify --low-memory` on a photo agrees with the default run on the top class.
Run once as is, where low-memory mode takes the own fp32 GEMM (its plain layout reads the (out, in)
weights in place) whatever the architecture's default, and once under POLA_GEMM_F32=onednn (oneDNN's
matmul on the file's layout): bench must name the provider the mode or the variable asks for.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_fixtures import check, exit_status, pola_ok, reference_case  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-4  # of max|logit|: the parity suites' fp32 bound


def bench(args, model, *extra):
    out = pola_ok(args, "bench", "-m", model, "--runs", "1", "--warmup", "0", "--peak-gflops", "1", "--json",
                  "--threads", "2", *extra)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pola_low_memory_") as tmp:
        for arch in ("reduced_pvt_sr", "reduced_swin_windows"):
            model, inp, ref = reference_case(tmp, arch)
            case = os.path.dirname(model)
            got = {}
            for mode, extra in (("default", []), ("low-memory", ["--low-memory"])):
                out = os.path.join(case, f"{mode}.npy")
                pola_ok(args, "run", "-m", model, "-i", inp, "-o", out, "--threads", "2",
                        *extra)
                got[mode] = np.load(out).astype(np.float64)
            scale = float(np.abs(ref).max())
            for mode, logits in got.items():
                err = float(np.abs(logits - ref).max()) / scale
                check(err <= TOLERANCE, f"{arch}: {mode} run within {TOLERANCE:g} of the reference ({err:.2e})")
            diff = float(np.abs(got["low-memory"] - got["default"]).max()) / scale
            check(diff <= TOLERANCE, f"{arch}: low-memory run within {TOLERANCE:g} of the default run ({diff:.2e})")
            packed, low = bench(args, model), bench(args, model, "--low-memory")
            check(low.get("low_memory") is True and packed.get("low_memory") is False,
                  f"{arch}: bench reports the mode it ran in", f"{low.get('low_memory')}, {packed.get('low_memory')}")
            wanted = {"onednn": "onednn", "own": "own_f32"}.get(os.environ.get("POLA_GEMM_F32", ""), "own_f32")
            check(low.get("gemm_f32") == wanted, f"{arch}: low-memory bench runs the fp32 GEMM {wanted}",
                  f"{low.get('gemm_f32')}")
            check(packed["packed_weights_mb"] > 0 and low["packed_weights_mb"] <= 0.1 * packed["packed_weights_mb"],
                  f"{arch}: low-memory packs {low['packed_weights_mb']:.3f} MB of weights, the default "
                  f"{packed['packed_weights_mb']:.3f} MB")
        photo_model = os.path.join(HERE, "..", "..", "models", "fashion_pola_pvt.pola")
        samples = os.path.join(HERE, "..", "..", "models", "samples")
        images = sorted(os.path.join(samples, f) for f in os.listdir(samples) if f.endswith(".png"))
        tops = {}
        for mode, extra in (("default", []), ("low-memory", ["--low-memory"])):
            out = pola_ok(args, "classify", "-m", photo_model, *images, "--top", "1", "--json", *extra)
            tops[mode] = [json.loads(line)["top"][0]["class"] for line in out.stdout.splitlines() if line.strip()]
        check(tops["default"] == tops["low-memory"] and len(tops["default"]) == len(images),
              f"classify --low-memory: the same top class on the {len(images)} samples", f"{tops}")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
