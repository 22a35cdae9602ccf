#!/usr/bin/python3
"""A stand-in for `pola run`, built on the PyTorch reference, to test the parity driver itself.

  fake_pola.py run --model M.pola --input X.npy --output Y.npy [--threads N] [--dump-dir D]

It reads the model file with the independent safetensors reader, rebuilds the model and runs it
in float32 (so its numbers differ from the float64 oracle the way an engine's do). The
environment variable FAKE_POLA_TRAP=<flag> makes it commit one trap, i.e. behave like a buggy
engine, which the driver must catch and localise.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))

from export_model import read_model_file  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["run"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dump-dir")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tensors, cfg, _ = read_model_file(args.model)
    model = build_model(cfg)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()},
                                                strict=False)
    if unexpected or any(not k.endswith(("relative_position_index", "attn_mask")) for k in missing):
        sys.exit(f"model file does not fit its config: missing {missing[:3]}, unexpected {unexpected[:3]}")
    traps = [os.environ["FAKE_POLA_TRAP"]] if os.environ.get("FAKE_POLA_TRAP") else []
    images = torch.from_numpy(np.load(args.input))
    logits, dumps = run(model, images, traps=traps, dump=bool(args.dump_dir), dtype=torch.float32)
    np.save(args.output, logits.numpy().astype(np.float32))
    if args.dump_dir:
        for name, tensor in dumps.items():
            np.save(os.path.join(args.dump_dir, f"{name}.npy"), tensor.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
