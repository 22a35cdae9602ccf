#!/usr/bin/python3
"""Float64 reference of the int8 scheme (tests/reference/README.md, "int8 post-training
quantization"): the model a file with I8 weights describes, run with fake quantization.

  int8_fake_quant.py --model Q.pola --input X.npy --output LOGITS.npy
                     [--mode static|dynamic_token|float_activations] [--trap NAME]...
                     [--float32] [--batch 64] [--threads 1]

Quantized layers are exactly the linear layers whose `<prefix>.weight` the file stores as I8
(with `<prefix>.weight_scale` F32 (out,) and `<prefix>.input_scale` F32 (1,)). The reference
model gets the dequantized weights q * weight_scale[o] (in float64: exact), every other tensor as
stored, and each quantized layer's input x is replaced, before the layer, by
  static             s = input_scale (from the file):          clip(rint(x / s), -127, 127) * s
  dynamic_token      s = max|x_row| / 127 per row (1 if 0):    clip(rint(x / s), -127, 127) * s
  float_activations  x unchanged (what `--precision fp32` of the int8 file computes)
rint is round half to even. Everything else (patch embeddings, spatial-reduction convs, the head,
norms, attention cores, residuals) runs in float, float64 by default.

Traps (each makes the reference commit one plausible mistake, so a test can prove it can fail):
  scale_off_by_one_step  every input scale multiplied by 128/127 (max|x|/128 instead of /127)
  per_tensor_weights     the dequantized weights re-quantized with one scale per tensor,
                         max|W| / 127, instead of one per output channel

The layer inputs are intercepted at torch.nn.functional.linear, keyed by the weight tensor, so
a layer the reference calls as F.linear(x, self.qkv.weight, ...) (Swin's S attention) is caught
as well as nn.Linear calls; every quantized layer must be reached on every run, else an error.
"""
import argparse
import contextlib
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetensors_io  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402

QMAX = 127
MODES = ("static", "dynamic_token", "float_activations")
INT8_TRAPS = {
    "scale_off_by_one_step": "every input scale multiplied by 128/127",
    "per_tensor_weights": "weights re-quantized with one scale per tensor (max|W|/127) instead of per output channel",
}
RECOMPUTABLE_BUFFERS = ("relative_position_index", "attn_mask")


def quantize_weight(w):
    """The weight rule. w: float32 (out, in). Returns (q int8 (out, in), scale float32 (out,)):
    scale[o] = float32(max_i |w[o, i]| / 127) (1.0 for an all-zero row),
    q = clip(rint(w / scale[o]), -127, 127), the division in float64 by the float32 scale."""
    w = np.asarray(w, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"weight of shape {w.shape}: a linear layer's weight is (out, in)")
    amax = np.abs(w.astype(np.float64)).max(axis=1)
    scale = (amax / QMAX).astype(np.float32)
    scale[amax == 0] = 1.0
    q = np.clip(np.rint(w.astype(np.float64) / scale.astype(np.float64)[:, None]), -QMAX, QMAX)
    return q.astype(np.int8), scale


def input_scale_of(amax):
    """The activation rule: float32(max|x| / 127), 1.0 where max|x| is 0."""
    amax = float(amax)
    return np.float32(amax / QMAX) if amax > 0 else np.float32(1.0)


def fake_quant(x, scale):
    """clip(rint(x / scale), -127, 127) * scale (torch.round is round half to even)."""
    return torch.clamp(torch.round(x / scale), -QMAX, QMAX) * scale


def fake_quant_token(x):
    """Dynamic per-token: one scale per row (last dimension), max|x_row| / 127 (1 for a zero row)."""
    amax = x.abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    return fake_quant(x, scale)


@contextlib.contextmanager
def intercept_linear_inputs(model, prefixes, fn, require_all=True):
    """While active, F.linear(x, W, b) with W = model.<prefix>.weight for a prefix in `prefixes`
    computes F.linear(fn(prefix, x), W, b). Yields {prefix: calls}; with require_all, raises on
    exit if a prefix was never reached (a layer the interception missed would silently stay
    float)."""
    by_weight = {}
    for p in prefixes:
        by_weight[id(model.get_submodule(p).weight)] = p
    calls = {p: 0 for p in prefixes}
    original = F.linear

    def linear(x, weight, bias=None):
        p = by_weight.get(id(weight))
        if p is not None:
            calls[p] += 1
            x = fn(p, x)
        return original(x, weight, bias)

    torch.nn.functional.linear = linear
    try:
        yield calls
    finally:
        torch.nn.functional.linear = original
    missed = [p for p, n in calls.items() if n == 0]
    if require_all and missed:
        raise RuntimeError(f"quantized layers never reached by the forward pass: {missed[:5]}")


class QuantizedModel:
    """A model file with I8 weights read into the reference (float64 parameters)."""

    def __init__(self, path):
        self.path = path
        tensors, meta = safetensors_io.load_file(path)
        if meta.get("format") != "polaformer":
            raise ValueError(f"{path}: not a polaformer model file")
        self.meta = meta
        self.config = json.loads(meta["config"])
        if self.config.get("family") not in ("pvt", "swin"):
            raise ValueError(f"{path}: int8 is defined for the pvt and swin families only")
        # The `quantization` entry is the file check's business (check_int8_logits.py), not needed here.
        self.quantization = meta.get("quantization")
        self.layers = {}  # prefix -> {"q", "weight_scale", "input_scale"}
        state = {}
        for name, a in tensors.items():
            if name.endswith(".weight") and a.dtype == np.int8:
                prefix = name[:-len(".weight")]
                self.layers[prefix] = self._layer(tensors, prefix, a)
                state[name] = self.layers[prefix]["q"].astype(np.float64) * \
                    self.layers[prefix]["weight_scale"].astype(np.float64)[:, None]
            elif name.endswith((".weight_scale", ".input_scale")):
                owner = name.rsplit(".", 1)[0] + ".weight"
                if owner not in tensors or tensors[owner].dtype != np.int8:
                    raise ValueError(f"{path}: {name} without an I8 {owner}")
            elif a.dtype == np.float32:
                state[name] = a.astype(np.float64)
            else:
                raise ValueError(f"{path}: {name} has dtype {a.dtype}, expected F32 (or I8 for a weight)")
        if not self.layers:
            raise ValueError(f"{path}: no I8 weight: not an int8 model file")
        self.model = build_model(self.config).to(torch.float64)
        missing, unexpected = self.model.load_state_dict(
            {k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
        if unexpected:
            raise ValueError(f"{path}: tensors the reference does not know: {unexpected[:5]}")
        bad = [k for k in missing if k.rsplit(".", 1)[-1] not in RECOMPUTABLE_BUFFERS]
        if bad:
            raise ValueError(f"{path}: tensors missing from the file: {bad[:5]}")
        for prefix in self.layers:
            if not isinstance(self.model.get_submodule(prefix), torch.nn.Linear):
                raise ValueError(f"{path}: {prefix}.weight is I8 but {prefix} is no linear layer")
        self.dequantized = {p: self.model.get_submodule(p).weight.detach().clone() for p in self.layers}

    def _layer(self, tensors, prefix, q):
        ws, xs = tensors.get(prefix + ".weight_scale"), tensors.get(prefix + ".input_scale")
        if q.ndim != 2:
            raise ValueError(f"{self.path}: {prefix}.weight I8 of shape {q.shape}, expected (out, in)")
        if ws is None or ws.dtype != np.float32 or ws.shape != (q.shape[0],):
            raise ValueError(f"{self.path}: {prefix}.weight_scale must be F32 of shape ({q.shape[0]},)")
        if xs is None or xs.dtype != np.float32 or xs.shape != (1,):
            raise ValueError(f"{self.path}: {prefix}.input_scale must be F32 of shape (1,)")
        for n, s in (("weight_scale", ws), ("input_scale", xs)):
            if not (np.isfinite(s).all() and (s > 0).all()):
                raise ValueError(f"{self.path}: {prefix}.{n} holds a value that is not finite and > 0")
        if (q == -128).any():
            raise ValueError(f"{self.path}: {prefix}.weight holds -128 (the scheme uses -127..127)")
        return {"q": q, "weight_scale": ws, "input_scale": xs}

    def _weights_for(self, traps):
        """{prefix: float64 weight tensor} the run uses."""
        if "per_tensor_weights" not in traps:
            return self.dequantized
        out = {}
        for p, w in self.dequantized.items():
            amax = float(w.abs().max())
            s = float(np.float32(amax / QMAX)) if amax > 0 else 1.0
            out[p] = torch.clamp(torch.round(w / s), -QMAX, QMAX) * s
        return out

    def activation_fn(self, mode, traps=()):
        """fn(prefix, x) -> the layer input the scheme feeds to the GEMM."""
        if mode == "float_activations":
            return lambda p, x: x
        if mode == "dynamic_token":
            return lambda p, x: fake_quant_token(x)
        if mode != "static":
            raise ValueError(f"unknown mode {mode!r}; known: {MODES}")
        factor = 128.0 / 127.0 if "scale_off_by_one_step" in traps else 1.0
        scales = {p: float(layer["input_scale"][0]) * factor for p, layer in self.layers.items()}
        return lambda p, x: fake_quant(x, scales[p])

    @contextlib.contextmanager
    def active(self, mode="static", traps=(), require_all=True):
        """While active, forward passes of self.model (in float64) compute the scheme: the
        weights `traps` asks for, each quantized layer's input replaced as `mode` says. Yields
        {prefix: calls}; with require_all, raises on exit unless every layer was reached."""
        unknown = set(traps) - set(INT8_TRAPS)
        if unknown:
            raise ValueError(f"unknown int8 traps {sorted(unknown)}; known: {sorted(INT8_TRAPS)}")
        fn = self.activation_fn(mode, traps)
        with torch.no_grad():
            for p, w in self._weights_for(traps).items():
                self.model.get_submodule(p).weight.copy_(w)
            try:
                with intercept_linear_inputs(self.model, list(self.layers), fn, require_all) as calls:
                    yield calls
            finally:
                # run() converts the parameters to its dtype and back, which would leave the
                # dequantized weights rounded after a float32 run (F32 tensors survive it exactly).
                for p, w in self.dequantized.items():
                    self.model.get_submodule(p).weight.copy_(w)

    def logits(self, images, mode="static", traps=(), dtype=torch.float64, batch=64, dump=False):
        """Logits (float64 numpy) of float32 NCHW images under `mode`, computed in `dtype`; with
        dump=True also the named intermediates of dump_names.py (float64 numpy, batches joined)."""
        images = np.asarray(images)
        out, dumps = [], {}
        for i in range(0, len(images), batch):
            with self.active(mode, traps):
                logits, named = run(self.model, torch.from_numpy(np.ascontiguousarray(images[i:i + batch])),
                                    dtype=dtype, dump=dump)
            out.append(logits.to(torch.float64).numpy())
            for k, v in (named or {}).items():
                dumps.setdefault(k, []).append(v.to(torch.float64).numpy())
        logits = np.concatenate(out)
        return (logits, {k: np.concatenate(v) for k, v in dumps.items()}) if dump else logits


def segments(cfg):
    """The model cut at the named intermediates of dump_names.py (the `pola run --dump-dir`
    contract), in execution order: (kind, module, input name, output name). Every part of the
    model is in exactly one segment. Kinds with quantized layers: "attn" (x + attention(norm1(x)):
    qg/kv/proj or qkvg/qkv/proj), "mlp" (x + fc2(gelu(fc1(norm2(x))))), "merge" (Swin patch
    merging: reduction(norm(gather(x)))). Float kinds: "embed" (patch embedding, PVT's positional
    table; input "input" = the images), "head" (Swin's final norm, pooling, the classifier; output
    "logits")."""
    out = []
    if cfg["family"] == "pvt":
        prev = "input"
        for s in range(1, 5):
            out.append(("embed", f"patch_embed{s}", prev, f"pos_embed{s}"))
            prev = f"pos_embed{s}"
            for j in range(cfg["depths"][s - 1]):
                name = f"block{s}.{j}"
                out += [("attn", name, prev, f"{name}.attn"), ("mlp", name, f"{name}.attn", name)]
                prev = name
        return out + [("head", "head", prev, "logits")]
    out.append(("embed", "patch_embed", "input", "patch_embed"))
    prev = "patch_embed"
    for i, depth in enumerate(cfg["depths"]):
        for j in range(depth):
            name = f"layers.{i}.blocks.{j}"
            out += [("attn", name, prev, f"{name}.attn"), ("mlp", name, f"{name}.attn", name)]
            prev = name
        if i < len(cfg["depths"]) - 1:
            out.append(("merge", f"layers.{i}.downsample", prev, f"layers.{i}.downsample"))
            prev = f"layers.{i}.downsample"
    return out + [("head", "head", prev, "logits")]


QUANTIZED_KINDS = ("attn", "mlp", "merge")


def stage_grids(cfg, height, width):
    """The (h, w) token grid of each stage for an input of height x width."""
    grids = []
    if cfg["family"] == "pvt":
        for p in cfg["patch_sizes"]:
            height, width = height // p, width // p
            grids.append((height, width))
        return grids
    height, width = height // cfg["patch_size"], width // cfg["patch_size"]
    for _ in cfg["depths"]:
        grids.append((height, width))
        height, width = height // 2, width // 2
    return grids


def _stage_of(cfg, module):
    if module == "head":
        return 3
    if cfg["family"] == "pvt":
        return int(module[len("patch_embed")]) - 1 if module.startswith("patch_embed") else int(module[5]) - 1
    return 0 if module == "patch_embed" else int(module.split(".")[1])


def run_segment(model, kind, module, x, grid, prev_grid=None):
    """One segment of the reference (whatever qm.active() set) from input x: tokens (B, N, C), or
    for the first embedding the images (B, C, H, W). grid: the segment's stage grid; prev_grid:
    the previous stage's (a PVT embedding of a later stage reads that grid)."""
    from pola_common import layer_norm, resize_grid
    from traps import RunContext
    ctx = RunContext(dump=True)
    if kind == "attn":
        # The block's forward up to its "<block>.attn" record (after the attention residual add).
        class Reached(Exception):
            pass

        class StopAtAttn(RunContext):
            def record(self, name, tensor):
                if name == f"{module}.attn":
                    raise Reached(tensor)
        try:
            model.get_submodule(module)(x, grid[0], grid[1], StopAtAttn(), module)
        except Reached as done:
            return done.args[0]
        raise RuntimeError(f"{module} never recorded {module}.attn")
    if kind == "mlp":
        block = model.get_submodule(module)
        return x + block.mlp(layer_norm(block.norm2, x, block.norm2.eps), ctx)
    if kind == "merge":
        return model.get_submodule(module)(x, grid[0], grid[1], ctx)
    family = model.cfg["family"]
    if kind == "embed" and family == "swin":
        return model.patch_embed(x, ctx)
    if kind == "embed":
        if x.dim() == 3:   # tokens of the previous stage -> NCHW
            x = x.transpose(1, 2).reshape(x.shape[0], -1, prev_grid[0], prev_grid[1])
        tokens, height, width = model.get_submodule(module)(x, ctx)
        s = int(module[len("patch_embed"):])
        native = model.checkpoint_res[s - 1]
        return tokens + resize_grid(getattr(model, f"pos_embed{s}"), (native, native), (height, width))
    if family == "swin":
        x = layer_norm(model.norm, x, model.norm.eps)
    return model.head(x.mean(dim=1))


def teacher_forced(qm, dumps, images, mode="static", traps=(), kinds=None, limit=None):
    """{output name: float64 numpy}: every segment of segments(cfg) (of the given kinds, the first
    `limit` of them) computed by the reference from the input `dumps` holds for it (e.g. the
    engine's own intermediates), so a rounding that fell the other way upstream does not
    propagate. dumps: {name: array (B, N, C) or (B*N, C)}; images: the (B, C, H, W) input."""
    cfg = qm.config
    images = np.asarray(images)
    grids = stage_grids(cfg, *images.shape[-2:])
    out = {}
    todo = [s for s in segments(cfg) if kinds is None or s[0] in kinds][:limit]
    for kind, module, src, dst in todo:
        stage = _stage_of(cfg, module)
        if src == "input":
            x = torch.from_numpy(images.astype(np.float64))
        else:
            a = np.asarray(dumps[src], dtype=np.float64)
            src_stage = stage - 1 if kind == "embed" else stage
            h, w = grids[src_stage]
            x = torch.from_numpy(a.reshape(images.shape[0], h * w, a.shape[-1]))
        with torch.no_grad(), qm.active(mode, traps, require_all=False):
            y = run_segment(qm.model, kind, module, x, grids[stage], grids[stage - 1] if stage else None)
        out[dst] = y.numpy()
    return out


def token_errors(got, ref):
    """Per token row: max over channels of |got - ref|, over max|ref| of the whole tensor."""
    ref = np.asarray(ref, np.float64)
    ref = ref.reshape(-1, ref.shape[-1])
    got = np.asarray(got, np.float64).reshape(ref.shape)
    scale = float(np.abs(ref).max()) or 1.0
    return np.abs(got - ref).max(axis=1) / scale


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model file with I8 weights")
    ap.add_argument("--input", required=True, help=".npy float32 (N, C, H, W), preprocessed")
    ap.add_argument("--output", required=True, help="logits .npy (float32 unless --float64-output)")
    ap.add_argument("--mode", default="static", choices=MODES)
    ap.add_argument("--trap", action="append", default=[], choices=sorted(INT8_TRAPS))
    ap.add_argument("--float32", action="store_true", help="run the reference in float32 (default float64)")
    ap.add_argument("--float64-output", action="store_true")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    qm = QuantizedModel(args.model)
    x = np.load(args.input)
    logits = qm.logits(x, mode=args.mode, traps=args.trap, batch=args.batch,
                       dtype=torch.float32 if args.float32 else torch.float64)
    np.save(args.output, logits if args.float64_output else logits.astype(np.float32))
    print(f"{args.output}: {len(qm.layers)} int8 layers, mode {args.mode}, traps {args.trap or 'none'}, "
          f"logits {logits.shape}, argmax {logits.argmax(1)[:16].tolist()}")


if __name__ == "__main__":
    main()
