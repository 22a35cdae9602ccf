"""The engine's FLOP count (model/flops.h, each family's FamilyRules::macs) against an
independent count: the PyTorch reference (tests/reference) is run once per config and size,
and every multiply-accumulate its kernels actually do is counted from the shapes of the aten
calls they dispatch (addmm / mm for linear layers, bmm for attention products, convolution
with its groups), plus the polarity normaliser's two dot products per query, which the
reference computes element-wise. No formula of the engine's is used here, so a term left
out of a family's count, or counted on the wrong number of tokens (say, without a Swin
window's padding), shows as a difference.

Every released preset (the engine's own, checked equal to the reference's) at 224 x 224, at
224 x 320 and at its own size, and the reduced variants that exercise spatial reduction,
padded and shifted windows and mixed attention, at their own size and a wider one.
PolaFormer++ (family "pp"): b0-b5 the same way, plus odd sizes (every stride-2 conv rounds up)
and its reduced variants; its normaliser is a matrix product in the reference, so bmm counts it.

Run: /usr/bin/python3 check_macs.py --print-macs build/tests/model/print_macs
"""
import argparse
import collections
import json
import os
import subprocess
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import pola_attention  # noqa: E402
from polaformer_ref import PP_PRESETS, PRESETS, REDUCED, build_model, get_config  # noqa: E402
from traps import RunContext  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_config import engine_config  # noqa: E402

# (name, [(height, width), ...]); presets also run at their own img_size.
CASES = [(name, [(224, 224), (224, 320)]) for name in PRESETS] + [
    ("reduced_pvt_sr", [(72, 72), (72, 96)]),            # sr 2 and 3: conv + kv on n tokens
    ("reduced_swin_windows", [(96, 96), (96, 160)]),     # shifted windows; 160 pads stage grids
    ("reduced_swin_mixed", [(64, 64), (64, 96)]),        # S and L stages, windowed and global
] + [(name, [(224, 224), (224, 320), (77, 50)]) for name in PP_PRESETS] + [
    ("reduced_pp_basic", [(40, 40), (65, 97)]),          # odd grids: ceil at every stride-2 conv
    ("reduced_pp_mixed", [(48, 48), (48, 80)]),          # S in stage 1, L in stage 4
]


class MacCounter(TorchDispatchMode):
    """Multiply-accumulates of the aten calls made inside it, by kind. Counting needs only
    shapes, so the products themselves are not computed: each returns zeros of its output's
    shape (nothing in the reference branches on values), which keeps the largest presets quick."""

    def __init__(self):
        super().__init__()
        self.macs = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func.overloadpacket.__name__
        if op in ("mm", "addmm"):
            a, b = (args[0], args[1]) if op == "mm" else (args[1], args[2])
            (m, k), n = a.shape, b.shape[1]
            self.macs["linear"] += m * k * n
            return a.new_zeros((m, n))
        if op in ("bmm", "baddbmm"):
            a, b = (args[0], args[1]) if op == "bmm" else (args[1], args[2])
            (batches, m, k), n = a.shape, b.shape[2]
            self.macs["attention products"] += batches * m * k * n
            return a.new_zeros((batches, m, n))
        if op == "convolution":
            x, weight, _, stride, padding, dilation, transposed, _, groups = args
            if transposed or x.dim() != 4:
                raise RuntimeError("only 2-D, non-transposed convolutions are counted here")
            spatial = [(x.shape[2 + i] + 2 * padding[i] - dilation[i] * (weight.shape[2 + i] - 1) - 1) // stride[i] + 1
                       for i in range(2)]
            outputs = x.shape[0] * weight.shape[0] * spatial[0] * spatial[1]
            per_output = weight.shape[1] * weight.shape[2] * weight.shape[3]  # in_channels / groups x kernel
            self.macs["depthwise conv" if groups > 1 else "conv"] += outputs * per_output
            return x.new_zeros((x.shape[0], weight.shape[0], *spatial))
        if op in ("mv", "dot", "vdot", "addmv", "addbmm", "matmul", "linear", "einsum", "tensordot"):
            raise RuntimeError(f"aten.{op} is not counted here; teach MacCounter its shapes")
        return func(*args, **(kwargs or {}))


def count_normaliser(counter):
    """Wraps the reference's linear attention: z_sim and z_opp are each one dot product of 2d per
    query and head, (q_* * mean(phi_k)).sum(-1), element-wise in torch, so counted from shapes."""
    original = pola_attention.linear_attention

    def counted(q_sim, q_opp, phi_k, v, **kw):
        counter.macs["attention products"] += q_sim.numel() + q_opp.numel()
        return original(q_sim, q_opp, phi_k, v, **kw)

    pola_attention.linear_attention = counted
    return original


def reference_macs(cfg, height, width, model):
    counter = MacCounter()
    original = count_normaliser(counter)
    try:
        with torch.no_grad(), counter:
            model(torch.zeros(1, cfg["in_chans"], height, width), RunContext())
    finally:
        pola_attention.linear_attention = original
    return counter.macs


def engine_macs(print_macs, what, height, width):
    r = subprocess.run([print_macs, what, str(height), str(width)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"print_macs {what} {height} {width}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--print-macs", required=True, help="the print_macs test tool")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", help="run only the case of this name")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    failures = 0
    for name, sizes in CASES:
        if args.only and name != args.only:
            continue
        cfg = get_config(name)
        if name in PRESETS or name in PP_PRESETS:
            sizes = sizes + ([(cfg["img_size"],) * 2] if (cfg["img_size"],) * 2 not in sizes else [])
            what = name  # the engine's own preset (model/presets.cpp)
        else:
            what = json.dumps(engine_config(cfg))
        model = build_model(cfg)
        for height, width in sizes:
            got = engine_macs(args.print_macs, what, height, width)
            if got["config"] != engine_config(cfg):
                print(f"FAIL {name}: the engine's preset differs from the reference's:\n  engine    {got['config']}"
                      f"\n  reference {engine_config(cfg)}")
                failures += 1
                break
            want = reference_macs(cfg, height, width, model)
            total = sum(want.values())
            where = f"{name} ({cfg['family']}) at {height}x{width}"
            if got["macs"] == total:
                print(f"ok   {where}: {total} MACs ({2 * total / 1e9:.3f} GFLOP)")
                continue
            failures += 1
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(want.items()))
            print(f"FAIL {where}: engine counts {got['macs']} MACs, the reference computes {total} "
                  f"(engine - reference = {got['macs'] - total}; reference by kind: {kinds})")
        del model
    if failures:
        print(f"{failures} count(s) differ")
        return 1
    print("all counts agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
