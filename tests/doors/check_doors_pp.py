#!/usr/bin/python3
"""The doors agree on a PolaFormer++ model (family "pp") made as a user makes one.

A randomized reduced_pp_basic reference (tests/reference: 3 channels, 17 classes, img_size 40) is
saved in the authors' checkpoint layout and converted with `pola convert` (BatchNorms folded); then
check_doors_agree.py runs every case on that model file with generated RGB images, plus a tensor at
an odd, non-square size (the family takes any size) and, as the size it refuses, one side past the
largest the engine takes (a pp model has no other size it cannot take).

  PYTHONPATH=build/python /usr/bin/python3 tests/doors/check_doors_pp.py --pola build/apps/pola \\
      --models models --source . [--arch reduced_pp_basic]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import torch  # noqa: E402

from pola_pp_checkpoint import save_pp_checkpoint  # noqa: E402
from polaformer_ref import build_model, get_config  # noqa: E402
from randomize import randomize  # noqa: E402

MAX_SIDE = 1 << 15  # model/geometry.h kMaxInputSide


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True, help="the models/ folder (passed on)")
    ap.add_argument("--source", required=True, help="the source tree (for examples/dask_classify.py)")
    ap.add_argument("--arch", default="reduced_pp_basic")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="pola_doors_pp_") as work:
        cfg = get_config(args.arch)
        model = build_model(cfg)
        randomize(model, seed=36)
        ckpt, path = os.path.join(work, "max_ema_acc.pth"), os.path.join(work, f"{args.arch}.pola")
        save_pp_checkpoint(ckpt, model, args.arch, seed=36)
        subprocess.run([args.pola, "convert", ckpt, "-o", path], check=True, capture_output=True, timeout=600)
        print(f"{args.arch}: {cfg['in_chans']} channels, {cfg['num_classes']} classes, img_size {cfg['img_size']}; "
              f"converted to {path}", flush=True)
        return subprocess.run([sys.executable, os.path.join(HERE, "check_doors_agree.py"), "--pola", args.pola,
                               "--models", args.models, "--source", args.source, "--model", path,
                               "--odd-size", "37x53", "--refused-size", f"{MAX_SIDE + 1}x1"]).returncode


if __name__ == "__main__":
    sys.exit(main())
