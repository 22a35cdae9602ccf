#!/usr/bin/python3
"""Times the PyTorch reference model (float32) in this process and prints one JSON line.

  /usr/bin/python3 torch_bench.py --model M.pola --batch B --threads N [--runs R] [--warmup W]
                                  [--input X.npy --output Y.npy] [--bf16]

Run as a child of compare.py, one process per measurement, so the parent can read this
process's peak RSS alone (GNU time). This is how a user of the authors' code would run it:
eval mode, no autograd, torch.set_num_threads(N), one inter-op thread. --bf16 casts the whole
model and the input with .bfloat16(), what PyTorch users do for bf16 on CPU (torch 1.13's CPU
autocast fails on these models: "expected scalar type BFloat16 but found Float" in layer_norm).
"""
import argparse
import json
import resource
import time

import numpy as np
import torch

from peer_models import input_shape, load_torch_model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--input", help="float32 NCHW .npy (default: fixed random images)")
    ap.add_argument("--output", help="write the last run's logits here (.npy, float32)")
    ap.add_argument("--bf16", action="store_true", help="model and input cast with .bfloat16()")
    ap.add_argument("--int8", action="store_true",
                    help="dynamic int8 quantization of the Linear layers (quantize_dynamic, qint8)")
    ap.add_argument("--qengine", default="onednn",
                    help="torch.backends.quantized.engine for --int8 (Debian's torch 1.13 has no fbgemm: "
                         "its engines are qnnpack, onednn)")
    args = ap.parse_args()

    # The default here can be 1 (PEERS.md); inter-op parallelism plays no part in one forward pass.
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    model, cfg = load_torch_model(args.model)
    if args.input:
        images = torch.from_numpy(np.load(args.input).astype(np.float32))
    else:
        images = torch.from_numpy(np.random.default_rng(0).standard_normal(input_shape(cfg, args.batch),
                                                                         dtype=np.float32))
    if args.bf16:
        model, images = model.bfloat16(), images.bfloat16()
    if args.int8:
        torch.backends.quantized.engine = args.qengine
        linears = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
        # pola_swin's attention calls F.linear(x, self.qkv.weight, ...) (for its q/v-only bias): a swapped
        # qkv module has no weight tensor there ("linear(): argument 'weight' must be Tensor, not method"),
        # so on Swin the qkv layers stay fp32 and every other nn.Linear is quantized.
        names = {n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)
                 and not (n.endswith(".qkv") and cfg.get("family") == "swin")}
        spec = {n: torch.ao.quantization.default_dynamic_qconfig for n in names}
        model = torch.ao.quantization.quantize_dynamic(model, spec, dtype=torch.qint8)
        # quantize_dynamic swaps nn.Linear modules; a weight used through F.linear (pola_swin's qkv, for its
        # q/v-only bias) stays float
        int8_linears = sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in model.modules())
    times = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            logits = model(images)
        for _ in range(args.runs):
            start = time.perf_counter()
            logits = model(images)
            times.append((time.perf_counter() - start) * 1e3)
    if args.output:
        np.save(args.output, logits.float().numpy())
    print(json.dumps({
        "engine": "pytorch_int8" if args.int8 else "pytorch_bf16" if args.bf16 else "pytorch",
        "qengine": torch.backends.quantized.engine if args.int8 else None,
        "int8_linears": f"{int8_linears} of {linears} nn.Linear" if args.int8 else None, "version": torch.__version__, "threads": torch.get_num_threads(),
        "batch": int(images.shape[0]), "times_ms": times,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB on Linux
    }))


if __name__ == "__main__":
    main()
