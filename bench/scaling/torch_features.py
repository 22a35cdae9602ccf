#!/usr/bin/python3
"""Times the PyTorch reference (float32, eval, no autograd) on one input size; one JSON line.

  /usr/bin/python3 torch_features.py --model M.pola --size 1024x1024 --threads 2 [--runs 3] [--warmup 1]

A child of run_scaling.py, one process per size, so ru_maxrss is this size's peak. The reference
runs its whole forward (the head is one 512 x 1000 matrix-vector product: negligible).
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from peer_models import load_torch_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--size", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    model, cfg = load_torch_model(args.model)
    images = torch.from_numpy(np.random.default_rng(0).standard_normal((1, cfg["in_chans"], h, w), dtype=np.float32))
    times = []
    with torch.inference_mode():
        for r in range(args.warmup + args.runs):
            start = time.perf_counter()
            model(images)
            if r >= args.warmup:
                times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"engine": "pytorch", "version": torch.__version__, "height": h, "width": w,
                      "threads": torch.get_num_threads(), "times_ms": times,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
