#!/usr/bin/python3
"""POLA_GEMM_F32=own|onednn: the engine's own fp32 GEMM gives the reference's answers.

  check_gemm_provider.py --pola build/apps/pola

For a reduced PVT (spatial-reduction convolutions) and a reduced Swin config, random weights made by
the PyTorch reference (make_case.py, float64 logits):
- `pola run` with POLA_GEMM_F32=own (every fp32 linear layer and MLP on kernels/gemm_f32.h) gives
  the reference's logits within 1e-4 of max|logit|, as POLA_GEMM_F32=onednn does, and the two runs
  agree within 1e-4 of max|logit| (on an AVX-512 EPYC they were seen to agree bit for bit: both sum each output over k in order
  with FMAs, then add bias and residual; under POLA_ISA=scalar the own path is the double-sum reference);
- `pola bench --json` names the provider it ran with (gemm_f32: own_f32 / onednn; unset: onednn on
  x86-64);
- a value that is neither is named on stderr and the default kept.
"""
import argparse
import json
import os
import platform
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_fixtures import check, exit_status, pola, reference_case  # noqa: E402

TOLERANCE = 1e-4  # of max|logit|: the parity suites' fp32 bound


def pola_env(args, env, *argv):
    r = pola(args, *argv, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL: POLA_GEMM_F32={env.get('POLA_GEMM_F32')} pola {' '.join(argv)}: exit {r.returncode}\n"
                 f"{r.stdout}{r.stderr}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pola_gemm_provider_") as tmp:
        for arch in ("reduced_pvt_sr", "reduced_swin_windows"):
            model, inp, ref = reference_case(tmp, arch)
            case = os.path.dirname(model)
            scale = float(np.abs(ref).max())
            got = {}
            for provider in ("own", "onednn"):
                env = {"POLA_GEMM_F32": provider}
                out = os.path.join(case, f"{provider}.npy")
                pola_env(args, env, "run", "-m", model, "-i", inp, "-o", out,
                         "--threads", "2", "--precision", "fp32")
                got[provider] = np.load(out).astype(np.float64)
                err = float(np.abs(got[provider] - ref).max()) / scale
                check(err <= TOLERANCE, f"{arch}: POLA_GEMM_F32={provider} within {TOLERANCE:g} of the reference "
                      f"({err:.2e})")
                b = json.loads(pola_env(args, env, "bench", "-m", model, "--runs", "1", "--warmup", "0",
                                        "--peak-gflops", "1", "--json", "--threads", "2", "--precision",
                                        "fp32").stdout)
                want = "own_f32" if provider == "own" else "onednn"
                check(b.get("gemm_f32") == want, f"{arch}: bench says gemm_f32 {want}", f"got {b.get('gemm_f32')}")
            diff = float(np.abs(got["own"] - got["onednn"]).max()) / scale
            check(diff <= TOLERANCE, f"{arch}: own and onednn runs within {TOLERANCE:g} ({diff:.2e})")
        model = os.path.join(tmp, "reduced_pvt_sr", "model.pola")
        r = pola(args, "bench", "-m", model, "--runs", "1", "--warmup", "0", "--peak-gflops", "1", "--json",
                 "--threads", "2", env={"POLA_GEMM_F32": "blas"})
        default = "onednn" if platform.machine() in ("x86_64", "AMD64") else "own_f32"
        check(r.returncode == 0 and "POLA_GEMM_F32=blas" in r.stderr
              and json.loads(r.stdout).get("gemm_f32") == default,
              f"POLA_GEMM_F32=blas is named on stderr and the default ({default}) kept", r.stderr)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
