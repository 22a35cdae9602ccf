"""The named intermediates (the engine's --dump-dir contract), in execution order, from a config.

PVT: patch_embed{i} (after its LayerNorm), pos_embed{i} (after the add), block{i}.{j}.attn (after
the attention residual add), block{i}.{j}, pool (B, C), head (logits); i is 1-based.
Swin: patch_embed, layers.{i}.blocks.{j}.attn, layers.{i}.blocks.{j}, layers.{i}.downsample
(i < 3), norm, pool, head; i is 0-based. Token tensors are (B, N, C).
"""


def expected_dump_names(cfg):
    names = []
    if cfg["family"] == "pvt":
        for i, depth in enumerate(cfg["depths"], start=1):
            names += [f"patch_embed{i}", f"pos_embed{i}"]
            for j in range(depth):
                names += [f"block{i}.{j}.attn", f"block{i}.{j}"]
    else:
        names.append("patch_embed")
        for i, depth in enumerate(cfg["depths"]):
            for j in range(depth):
                names += [f"layers.{i}.blocks.{j}.attn", f"layers.{i}.blocks.{j}"]
            if i < len(cfg["depths"]) - 1:
                names.append(f"layers.{i}.downsample")
        names.append("norm")
    return names + ["pool", "head"]


def stage_output_names(cfg):
    """Per stage, the intermediate holding its output (the tokens after its last block): what
    `pola features` writes as stage<i>.npy, reshaped to NCHW."""
    if cfg["family"] == "pvt":
        return [f"block{i}.{depth - 1}" for i, depth in enumerate(cfg["depths"], start=1)]
    return [f"layers.{i}.blocks.{depth - 1}" for i, depth in enumerate(cfg["depths"])]
