"""The checkpoint layout of SPEC section 6, derived from a config independently of the model code.

The self-test compares build_model(cfg).state_dict() against this, key by key and shape by shape,
and also matches every key against the literal key patterns listed in the spec.
"""
import re

import torch

# SPEC 6 key patterns (repeat indices elided there; \d+ here).
PVT_KEY_PATTERNS = [
    r"patch_embed\d\.proj\.(weight|bias)", r"patch_embed\d\.norm\.(weight|bias)", r"pos_embed\d",
    r"block\d\.\d+\.norm[12]\.(weight|bias)", r"block\d\.\d+\.attn\.(qg|kv|proj)\.(weight|bias)",
    r"block\d\.\d+\.attn\.dwc\.(weight|bias)", r"block\d\.\d+\.attn\.(power|scale|positional_encoding)",
    r"block\d\.\d+\.attn\.(sr|norm)\.(weight|bias)",  # only when sr_ratio > 1 (SPEC 3)
    r"block\d\.\d+\.mlp\.fc[12]\.(weight|bias)", r"norm\.(weight|bias)", r"head\.(weight|bias)",
]
SWIN_KEY_PATTERNS = [
    r"patch_embed\.proj\.(weight|bias)", r"patch_embed\.norm\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.norm[12]\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.attn\.(qkvg|qkv|proj|dwc)\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.attn\.(power|scale|positional_encoding)",
    r"layers\.\d\.blocks\.\d+\.attn\.relative_position_(bias_table|index)",
    r"layers\.\d\.blocks\.\d+\.attn_mask", r"layers\.\d\.blocks\.\d+\.mlp\.fc[12]\.(weight|bias)",
    r"layers\.\d\.downsample\.norm\.(weight|bias)", r"layers\.\d\.downsample\.reduction\.weight",
    r"norm\.(weight|bias)", r"head\.(weight|bias)",
]


# SPEC-polaformerpp 3.1 (PolaFormer++).
_BN = r"(weight|bias|running_mean|running_var|num_batches_tracked)"
PP_KEY_PATTERNS = [
    r"patch_embed\.proj\.(0|3|6|9)\.(weight|bias)", r"patch_embed\.proj\.(1|4|7|10)\." + _BN,
    r"layers\.\d\.(RoPE|RoPE_linear)\.angle",
    r"layers\.\d\.blocks\.\d+\.gamma_[12]", r"layers\.\d\.blocks\.\d+\.norm[12]\.norm\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.pos\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.ffn\.(fc1|fc2|dwconv)\.(weight|bias)",
    r"layers\.\d\.blocks\.\d+\.attn\.(s1|s2)",
    r"layers\.\d\.blocks\.\d+\.attn\.(qkvg|qkvo|lepe|proj)\.(weight|bias)",
    r"layers\.[012]\.downsample\.reduction\.(weight|bias)", r"layers\.[012]\.downsample\.norm\." + _BN,
    r"proj\.(weight|bias)", r"norm\." + _BN, r"head\.(weight|bias)",
]


def key_matches_spec(family, key):
    if family == "pp":
        return any(re.fullmatch(p, key) for p in PP_KEY_PATTERNS)
    patterns = PVT_KEY_PATTERNS if family == "pvt" else SWIN_KEY_PATTERNS
    return any(re.fullmatch(p, key) for p in patterns)


def _linear(out, prefix, n_out, n_in, bias=True):
    out[f"{prefix}.weight"] = (n_out, n_in)
    if bias:
        out[f"{prefix}.bias"] = (n_out,)


def _norm(out, prefix, n):
    out[f"{prefix}.weight"] = (n,)
    out[f"{prefix}.bias"] = (n,)


def _pola_attention(out, prefix, c, heads, key_tokens, k):
    d = c // heads
    _linear(out, f"{prefix}.proj", c, c)
    out[f"{prefix}.dwc.weight"] = (d, 1, k, k)
    out[f"{prefix}.dwc.bias"] = (d,)
    out[f"{prefix}.power"] = (1, heads, 1, d)
    out[f"{prefix}.scale"] = (1, 1, c)
    out[f"{prefix}.positional_encoding"] = (1, key_tokens, c)


def expected_shapes(cfg):
    """{key: shape} of every float tensor, plus {key: shape} of int64 buffers."""
    floats, ints = {}, {}
    dims, k = cfg["embed_dims"], cfg["kernel_size"]
    if cfg["family"] == "pvt":
        res, cin = cfg["img_size"], cfg["in_chans"]
        for i in range(4):
            s, c, p, r = i + 1, dims[i], cfg["patch_sizes"][i], cfg["sr_ratios"][i]
            res //= p
            floats[f"patch_embed{s}.proj.weight"] = (c, cin, p, p)
            floats[f"patch_embed{s}.proj.bias"] = (c,)
            _norm(floats, f"patch_embed{s}.norm", c)
            floats[f"pos_embed{s}"] = (1, res * res, c)
            hidden = int(c * cfg["mlp_ratios"][i])
            for j in range(cfg["depths"][i]):
                b = f"block{s}.{j}"
                _norm(floats, f"{b}.norm1", c)
                _norm(floats, f"{b}.norm2", c)
                _linear(floats, f"{b}.attn.qg", 2 * c, c)
                _linear(floats, f"{b}.attn.kv", 2 * c, c)
                _pola_attention(floats, f"{b}.attn", c, cfg["num_heads"][i], (res // r) ** 2, k)
                if r > 1:
                    floats[f"{b}.attn.sr.weight"] = (c, c, r, r)
                    floats[f"{b}.attn.sr.bias"] = (c,)
                    _norm(floats, f"{b}.attn.norm", c)
                _linear(floats, f"{b}.mlp.fc1", hidden, c)
                _linear(floats, f"{b}.mlp.fc2", c, hidden)
            cin = c
    else:
        res = cfg["img_size"] // cfg["patch_size"]
        p = cfg["patch_size"]
        floats["patch_embed.proj.weight"] = (dims[0], cfg["in_chans"], p, p)
        floats["patch_embed.proj.bias"] = (dims[0],)
        _norm(floats, "patch_embed.norm", dims[0])
        for i in range(4):
            c, h, t = dims[i], cfg["num_heads"][i], cfg["attn_types"][i]
            window = cfg["window_size"] if t == "L" else cfg["window_size_softmax"]
            w = min(window, res)
            hidden = int(c * cfg["mlp_ratios"][i])
            for j in range(cfg["depths"][i]):
                b = f"layers.{i}.blocks.{j}"
                _norm(floats, f"{b}.norm1", c)
                _norm(floats, f"{b}.norm2", c)
                if t == "L":
                    _linear(floats, f"{b}.attn.qkvg", 4 * c, c)
                    _pola_attention(floats, f"{b}.attn", c, h, w * w, k)
                else:
                    _linear(floats, f"{b}.attn.qkv", 3 * c, c)
                    _linear(floats, f"{b}.attn.proj", c, c)
                    floats[f"{b}.attn.relative_position_bias_table"] = ((2 * w - 1) ** 2, h)
                    ints[f"{b}.attn.relative_position_index"] = (w * w, w * w)
                if res > window and j % 2 == 1:
                    floats[f"{b}.attn_mask"] = ((res // w) ** 2, w * w, w * w)
                _linear(floats, f"{b}.mlp.fc1", hidden, c)
                _linear(floats, f"{b}.mlp.fc2", c, hidden)
            if i < 3:
                _norm(floats, f"layers.{i}.downsample.norm", 4 * c)
                _linear(floats, f"layers.{i}.downsample.reduction", 2 * c, 4 * c, bias=False)
                res //= 2
    _norm(floats, "norm", dims[3])
    _linear(floats, "head", cfg["num_classes"], dims[3])
    return floats, ints


def _batch_norm(floats, ints, prefix, n):
    for name in ("weight", "bias", "running_mean", "running_var"):
        floats[f"{prefix}.{name}"] = (n,)
    ints[f"{prefix}.num_batches_tracked"] = ()


def expected_pp_shapes(cfg):
    """SPEC-polaformerpp 3.1/3.2: {key: shape} of float tensors and of int64 buffers."""
    floats, ints = {}, {}
    dims = cfg["embed_dims"]
    s = dims[0] // 2
    for idx, (cin, cout) in zip((0, 3, 6, 9), ((cfg["in_chans"], s), (s, s), (s, s), (s, dims[0]))):
        floats[f"patch_embed.proj.{idx}.weight"] = (cout, cin, 3, 3)
        floats[f"patch_embed.proj.{idx}.bias"] = (cout,)
        _batch_norm(floats, ints, f"patch_embed.proj.{idx + 1}", cout)
    for i in range(4):
        c, h = dims[i], cfg["num_heads"][i]
        d, f = c // h, int(cfg["mlp_ratio"] * c)
        floats[f"layers.{i}.RoPE.angle"] = (d // 2,)
        floats[f"layers.{i}.RoPE_linear.angle"] = (d,)
        for j in range(cfg["depths"][i]):
            b = f"layers.{i}.blocks.{j}"
            floats[f"{b}.gamma_1"] = floats[f"{b}.gamma_2"] = (1, c, 1, 1)
            _norm(floats, f"{b}.norm1.norm", c)
            _norm(floats, f"{b}.norm2.norm", c)
            floats[f"{b}.pos.weight"] = (c, 1, 3, 3)
            floats[f"{b}.pos.bias"] = (c,)
            _linear(floats, f"{b}.ffn.fc1", f, c)
            _linear(floats, f"{b}.ffn.fc2", c, f)
            floats[f"{b}.ffn.dwconv.weight"] = (f, 1, 3, 3)
            floats[f"{b}.ffn.dwconv.bias"] = (f,)
            if cfg["attn_types"][i] == "L":
                floats[f"{b}.attn.s1"] = floats[f"{b}.attn.s2"] = (1, h, 1, 2 * d)
                _linear(floats, f"{b}.attn.qkvg", 4 * c, c)
            else:
                _linear(floats, f"{b}.attn.qkvo", 4 * c, c)
            floats[f"{b}.attn.lepe.weight"] = (c, 1, 5, 5)
            floats[f"{b}.attn.lepe.bias"] = (c,)
            _linear(floats, f"{b}.attn.proj", c, c)
        if i < 3:
            floats[f"layers.{i}.downsample.reduction.weight"] = (dims[i + 1], c, 3, 3)
            floats[f"layers.{i}.downsample.reduction.bias"] = (dims[i + 1],)
            _batch_norm(floats, ints, f"layers.{i}.downsample.norm", dims[i + 1])
    p = cfg["projection"]
    floats["proj.weight"] = (p, dims[3], 1, 1)
    floats["proj.bias"] = (p,)
    _batch_norm(floats, ints, "norm", p)
    floats["head.weight"] = (cfg["num_classes"], p, 1, 1)
    floats["head.bias"] = (cfg["num_classes"],)
    return floats, ints


def compare_state_dict(cfg, state_dict):
    """List of human-readable problems (empty when the state dict matches the spec)."""
    floats, ints = expected_pp_shapes(cfg) if cfg["family"] == "pp" else expected_shapes(cfg)
    problems = []
    expected = {**floats, **ints}
    for key in sorted(set(expected) - set(state_dict)):
        problems.append(f"missing {key}")
    for key in sorted(set(state_dict) - set(expected)):
        problems.append(f"unexpected {key}")
    for key, value in state_dict.items():
        if key in expected and tuple(value.shape) != tuple(expected[key]):
            problems.append(f"{key}: shape {tuple(value.shape)} != {expected[key]}")
        want_dtype = torch.int64 if key in ints else torch.float32
        if key in expected and value.dtype != want_dtype:
            problems.append(f"{key}: dtype {value.dtype} != {want_dtype}")
        if not key_matches_spec(cfg["family"], key):
            problems.append(f"{key}: matches no SPEC 6 key pattern")
    return problems
